// The hardware, compiler and flags a build runs with keep a seq_cst store
// ordered before a later seq_cst load of another location (the
// store-buffering pattern every Dekker pair in weft relies on: the deque's
// public pop against a steal, the sleep protocol's prepare/new_work).
#include "support/litmus.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>

#include "support/support.hpp"

namespace {

TEST(Litmus, SeqCstStoreIsOrderedBeforeALaterSeqCstLoad) {
  if (weft::test::emulator() != nullptr) {
    if (weft::test::emulator_breaks_store_buffering()) {
      // qemu-user on an x86 host: support/litmus.hpp says why this is the
      // emulator's doing, and which tests are skipped for it.
      GTEST_SKIP() << weft::test::emulator() << " broke seq_cst store buffering";
    }
    return;
  }
  const std::size_t rounds = weft::test::scaled(20'000, 2'000);
  EXPECT_EQ(weft::test::store_buffering_violations(rounds, rounds), 0U)
      << "both loads of a seq_cst store-buffering pair read 0 in " << rounds << " rounds";
}

}  // namespace
