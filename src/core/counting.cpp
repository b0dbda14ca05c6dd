// The job counts that are not on a hot path (detail/core/counting.hpp has
// the rest): counting from a thread that is not a worker of the pool, with
// its epoch re-reads and its check against a closing pool, and the double
// collect that decides whether the pool is idle.
#include <atomic>
#include <cstdint>
#include <string>

#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft {

pool::ticket pool::counting::count_outside_spawn(pool& p, std::uint32_t n) {
  if (!p.sequential()) {
    if (detail::lane* l = p.my_lane()) return count_against(p, l->cache, n);
  }
  return count_shared(p, n);
}

pool::ticket pool::counting::count_shared(pool& p, std::uint32_t n) {
  return count_against(p, p.accounting_.shared(), n);
}

void pool::counting::add_spawned(const pool& p, detail::job_cache& c, unsigned epoch,
                                 std::uint32_t n) {
  std::atomic<std::uint64_t>& spawned = c.spawned[epoch];
  // seq_cst: see check_open() and count_against().
  if (p.accounting_.is_shared(c)) {
    spawned.fetch_add(n, std::memory_order_seq_cst);
  } else {
    // A lane's thread is its only writer.
    spawned.store(spawned.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
  }
}

pool::ticket pool::counting::count_against(pool& p, detail::job_cache& c, std::uint32_t n) {
  unsigned inherited = 0;
  if (detail::running_scope::find(&p, inherited)) {
    // A job of ours, run by a thread that is not our worker (a helping
    // waiter, a wait_until caller): its spawns belong to its epoch, which
    // cannot drain before it finishes. Like a worker's job, it may spawn
    // while the pool closes: it is counted and unfinished, so the
    // destructor's drain waits for it, and sees this count (seq_cst) before
    // its finish. Refusing here made pool_closed escape from a job that a
    // waiter ran during the destruction.
    ticket t{&c, inherited, n};
    add_spawned(p, c, t.epoch, n);
    return t;
  }
  // seq_cst, as the re-reads below: ordered with the flip in
  // accounting::drain().
  std::uint64_t seen = p.accounting_.epoch();
  ticket t{&c, static_cast<unsigned>(seen & 1), n};
  add_spawned(p, c, t.epoch, n);
  check_open(p, t);
  // A wait() may have flipped the epoch between our read and our count, and
  // seen that parity drained without us: then a later wait() would not
  // wait for this job although it was submitted before that wait began.
  // So read the epoch again: while it moves, move the job to the current
  // parity (counts only grow: count it there, and count it finished in the
  // old one). Once a re-read finds it where it was, any later flip comes
  // after our count in the seq_cst order, and the flipping waiter's collect
  // sees it (verify/idle.pml, docs/waiting.md).
  for (;;) {
    const std::uint64_t now = p.accounting_.epoch();
    if (now == seen) break;
    const auto parity = static_cast<unsigned>(now & 1);
    if (parity != t.epoch) {
      add_spawned(p, c, parity, n);
      // The counts left behind are submissions of their own that end here:
      // finished for pool.wait(), and left for the destructor, which waits
      // until every cache's left count matches its spawned counts.
      count_finished(p, c, t.epoch, n);
      end_submission(p, t);
      t.epoch = parity;
    }
    seen = now;
  }
  return t;
}

void pool::counting::check_open(pool& p, const ticket& t) {
  // The caller's seq_cst increment of a spawned count and this seq_cst load
  // pair with the destructor's accounting::close() and its seq_cst loads in
  // quiescent(): a submitter either sees the pool closing, or the
  // destructor sees its job and waits for it.
  if (!p.accounting_.closing() || p.on_own_worker()) return;
  // The message first: once the count below and the end of the submission
  // are done, the destructor may free the pool.
  pool_closed refusal("weft: pool '" + p.name_ +
                      "' is being destroyed and takes no new jobs; submit before its "
                      "destruction begins, or from one of its own jobs");
  count_finished(p, *t.cache, t.epoch, t.submission);
  end_submission(p, t);
  throw refusal;
}

std::uint64_t pool::counting::total(const pool& p,
                                    std::atomic<std::uint64_t> (detail::job_cache::*count)[2],
                                    unsigned first_parity, unsigned last_parity) noexcept {
  // seq_cst loads: the second half of the Dekker pairs in check_open() and
  // idle_waiters::wake().
  std::uint64_t sum = 0;
  auto add = [&](const detail::job_cache& c) {
    for (unsigned e = first_parity; e <= last_parity; ++e) {
      sum += (c.*count)[e].load(std::memory_order_seq_cst);
    }
  };
  add(p.accounting_.shared());
  for (const auto& w : p.roster_.all()) add(w->cache);
  const detail::lane_set& lanes = p.queues_.lanes();
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) add(lanes[i].cache);
  return sum;
}

bool pool::counting::quiescent(const pool& p, unsigned first_parity,
                               unsigned last_parity) noexcept {
  // Counts only grow, and a job's finish is counted after its spawn (and
  // after the spawns of everything it spawned, which share its parity). If
  // the spawned totals read before and after the finished total agree,
  // nothing was spawned in between, and finished == spawned means every job
  // counted so far has finished at the moment finished was read
  // (docs/waiting.md).
  const auto spawned = &detail::job_cache::spawned;
  const std::uint64_t spawned_before = total(p, spawned, first_parity, last_parity);
  const std::uint64_t finished = total(p, &detail::job_cache::finished, first_parity, last_parity);
  const std::uint64_t spawned_after = total(p, spawned, first_parity, last_parity);
  return spawned_before == spawned_after && finished == spawned_after;
}

bool pool::counting::submissions_ended(const pool& p) noexcept {
  auto ended = [](const detail::job_cache& c) {
    // Spawned first: a submission counts its spawn before it ends. Acquire
    // pairs with the release in end_submission(): the submitter's last
    // touch of the pool happens before our return.
    const std::uint64_t spawned =
        c.spawned[0].load(std::memory_order_seq_cst) + c.spawned[1].load(std::memory_order_seq_cst);
    return c.left.load(std::memory_order_acquire) == spawned;
  };
  if (!ended(p.accounting_.shared())) return false;
  const detail::lane_set& lanes = p.queues_.lanes();
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    if (!ended(lanes[i].cache)) return false;
  }
  return true;
}

}  // namespace weft
