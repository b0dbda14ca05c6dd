// Tests of weft::detail::work_deque: sequential order and growth, then owner-versus-thieves
// stress runs that check every item is taken exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <weft/detail/config.hpp>
#include <weft/detail/deque.hpp>

#include "support/litmus.hpp"

// WEFT_STRESS_SCALE (a positive double, default 1) scales the item counts of the stress tests.
static double stress_scale() {
  // Nothing in the tests sets environment variables, so reading one is safe.
  const char* text = std::getenv("WEFT_STRESS_SCALE");  // NOLINT(concurrency-mt-unsafe)
  if (text == nullptr) {
    return 1.0;
  }
  char* end = nullptr;
  const double scale = std::strtod(text, &end);
  return end != text && scale > 0.0 ? scale : 1.0;
}

namespace {

using weft::detail::work_deque;

// The items are addresses of these; id is the item's index in push order. The concurrent tests
// write id again just before pushing and the takers read it, so ThreadSanitizer checks that the
// deque orders the push before the take.
struct item {
  std::size_t id;
};

void push_fresh(work_deque<item*>& dq, item& it, std::size_t id) {
  it.id = id;
  dq.push(&it);
}

std::size_t scaled(std::size_t count, std::size_t minimum) {
  const auto n = static_cast<std::size_t>(static_cast<double>(count) * stress_scale());
  return std::max(n, minimum);
}

std::vector<item> make_items(std::size_t n) {
  std::vector<item> items(n);
  for (std::size_t i = 0; i < n; ++i) {
    items[i].id = i;
  }
  return items;
}

// Every id in [0, n) must appear exactly once across the lists.
void expect_each_taken_once(std::size_t n, const std::vector<std::vector<std::size_t>>& lists) {
  std::vector<int> count(n, 0);
  for (const auto& list : lists) {
    for (std::size_t id : list) {
      ASSERT_LT(id, n);
      ++count[id];
    }
  }
  std::size_t lost = 0;
  std::size_t duplicated = 0;
  for (std::size_t id = 0; id < n; ++id) {
    if (count[id] == 0) {
      ADD_FAILURE() << "item " << id << " was never taken";
      ++lost;
    } else if (count[id] > 1) {
      ADD_FAILURE() << "item " << id << " was taken " << count[id] << " times";
      ++duplicated;
    }
    if (lost + duplicated == 10) {
      FAIL() << "stopping after 10 bad items";
    }
  }
}

// A thief takes items in the order they were pushed.
void expect_increasing(const std::vector<std::size_t>& ids) {
  EXPECT_TRUE(std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<>{}) == ids.end())
      << "a thief took items out of push order";
}

// Spins for a short random time, to vary which side of a race comes first.
void short_delay(std::mt19937& rng) {
  std::atomic<int> sink{0};
  const int spins = std::uniform_int_distribution<int>{0, 1023}(rng);
  for (int i = 0; i < spins; ++i) {
    sink.fetch_add(1, std::memory_order_relaxed);
  }
}

// Busy-waits until done() holds, yielding once the wait gets long (the machine may have fewer
// cores than the test has threads).
template <class Predicate>
void spin_until(Predicate done) {
  for (int spins = 0; !done();) {
    if (spins < 200) {
      ++spins;
      weft::detail::cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

// ---- single thread ----------------------------------------------------------------------------

TEST(WorkDeque, NewDequeIsEmpty) {
  work_deque<item*> dq;
  EXPECT_TRUE(dq.empty());
  EXPECT_EQ(dq.size(), 0u);
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_EQ(dq.steal(), nullptr);
  EXPECT_TRUE(dq.empty());
  EXPECT_EQ(dq.capacity(), 256u);
}

TEST(WorkDeque, CapacityIsRoundedUpToAPowerOfTwoOfAtLeastTwo) {
  EXPECT_EQ(work_deque<item*>{0}.capacity(), 2u);
  EXPECT_EQ(work_deque<item*>{1}.capacity(), 2u);
  EXPECT_EQ(work_deque<item*>{2}.capacity(), 2u);
  EXPECT_EQ(work_deque<item*>{3}.capacity(), 4u);
  EXPECT_EQ(work_deque<item*>{256}.capacity(), 256u);
  EXPECT_EQ(work_deque<item*>{257}.capacity(), 512u);
}

TEST(WorkDeque, PopTakesNewestFirst) {
  std::vector<item> items = make_items(10);
  work_deque<item*> dq;
  for (item& it : items) {
    dq.push(&it);
  }
  EXPECT_EQ(dq.size(), 10u);
  for (std::size_t i = 10; i-- > 0;) {
    EXPECT_EQ(dq.pop(), &items[i]);
  }
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_TRUE(dq.empty());
}

TEST(WorkDeque, StealTakesOldestFirst) {
  std::vector<item> items = make_items(10);
  work_deque<item*> dq;
  for (item& it : items) {
    dq.push(&it);
  }
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(dq.steal(), &items[i]);
    EXPECT_EQ(dq.size(), 9 - i);
  }
  EXPECT_EQ(dq.steal(), nullptr);
  EXPECT_TRUE(dq.empty());
}

TEST(WorkDeque, PopAndStealTakeFromOppositeEnds) {
  std::vector<item> items = make_items(5);
  work_deque<item*> dq;
  for (item& it : items) {
    dq.push(&it);
  }
  EXPECT_EQ(dq.steal(), &items[0]);
  EXPECT_EQ(dq.pop(), &items[4]);
  EXPECT_EQ(dq.steal(), &items[1]);
  EXPECT_EQ(dq.pop(), &items[3]);
  EXPECT_EQ(dq.size(), 1u);
  EXPECT_EQ(dq.pop(), &items[2]);
  EXPECT_EQ(dq.steal(), nullptr);
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_TRUE(dq.empty());
}

TEST(WorkDeque, EmptyDequeStaysUsable) {
  std::vector<item> items = make_items(3);
  work_deque<item*> dq{2};
  for (int round = 0; round < 100; ++round) {
    // Pops and steals on an empty deque must leave it as it was.
    EXPECT_EQ(dq.pop(), nullptr);
    EXPECT_EQ(dq.pop(), nullptr);
    EXPECT_EQ(dq.steal(), nullptr);
    EXPECT_TRUE(dq.empty());
    EXPECT_EQ(dq.size(), 0u);
    dq.push(&items[0]);
    dq.push(&items[1]);
    EXPECT_FALSE(dq.empty());
    EXPECT_EQ(dq.size(), 2u);
    EXPECT_EQ(dq.steal(), &items[0]);
    EXPECT_EQ(dq.pop(), &items[1]);
    EXPECT_EQ(dq.pop(), nullptr);
    dq.push(&items[2]);
    EXPECT_EQ(dq.steal(), &items[2]);
  }
  // At most two items were ever in the deque, so the buffer of two never had to grow.
  EXPECT_EQ(dq.capacity(), 2u);
}

TEST(WorkDeque, GrowsFromTwoKeepingLifoOrder) {
  constexpr std::size_t n = 5000;
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{2};
  for (item& it : items) {
    dq.push(&it);
  }
  EXPECT_EQ(dq.capacity(), 8192u);
  EXPECT_EQ(dq.size(), n);
  for (std::size_t i = n; i-- > 0;) {
    ASSERT_EQ(dq.pop(), &items[i]) << "at " << i;
  }
  EXPECT_EQ(dq.pop(), nullptr);
}

TEST(WorkDeque, PushManyPublishesInOrderAndGrows) {
  constexpr std::size_t n = 1000;
  std::vector<item> items = make_items(n);
  std::vector<item*> pointers;
  for (item& it : items) {
    pointers.push_back(&it);
  }
  work_deque<item*> dq{2};
  dq.push_many(pointers.data(), 10);
  dq.push_many(pointers.data() + 10, n - 10);  // grows several times within one call
  dq.push_many(pointers.data(), 0);
  EXPECT_EQ(dq.size(), n);
  EXPECT_EQ(dq.steal(), &items[0]) << "the oldest is at the thieves' end";
  for (std::size_t i = n; i-- > 1;) {
    ASSERT_EQ(dq.pop(), &items[i]) << "at " << i;
  }
  EXPECT_EQ(dq.pop(), nullptr);
}

TEST(WorkDeque, GrowsFromTwoKeepingFifoOrder) {
  constexpr std::size_t n = 5000;
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{2};
  for (item& it : items) {
    dq.push(&it);
  }
  EXPECT_EQ(dq.capacity(), 8192u);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(dq.steal(), &items[i]) << "at " << i;
  }
  EXPECT_EQ(dq.steal(), nullptr);
}

// Growth copies a live range that wraps around the end of the ring.
TEST(WorkDeque, GrowsWhenLiveItemsWrapAroundTheBuffer) {
  std::vector<item> items = make_items(1000);
  work_deque<item*> dq{4};
  // Moves top and bottom to index 999: slot 3 of 4, slot 7 of 8, slot 7 of 16, ...
  for (int round = 0; round < 333; ++round) {
    for (std::size_t i = 0; i < 3; ++i) {
      dq.push(&items[i]);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      ASSERT_EQ(dq.steal(), &items[i]);
    }
  }
  ASSERT_EQ(dq.capacity(), 4u);
  ASSERT_TRUE(dq.empty());
  // The next four items take slots 3, 0, 1, 2, so the fifth push copies a wrapped range; so do
  // the later growths, up to 64.
  for (std::size_t i = 0; i < 40; ++i) {
    dq.push(&items[i]);
  }
  EXPECT_EQ(dq.capacity(), 64u);
  EXPECT_EQ(dq.steal(), &items[0]);
  EXPECT_EQ(dq.pop(), &items[39]);
  for (std::size_t i = 1; i < 39; ++i) {
    ASSERT_EQ(dq.steal(), &items[i]);
  }
  EXPECT_TRUE(dq.empty());
}

// ---- the private part -------------------------------------------------------------------------

TEST(WorkDeque, PrivatePushIsPublishedOnlyWhenThePublicPartIsEmpty) {
  std::vector<item> items = make_items(4);
  work_deque<item*> dq;
  // Nothing public: the first private push publishes itself.
  EXPECT_TRUE(dq.push_private(&items[0]));
  EXPECT_EQ(dq.size(), 1u);
  EXPECT_EQ(dq.private_size(), 0u);
  // Thieves have something: the next ones stay private.
  EXPECT_FALSE(dq.push_private(&items[1]));
  EXPECT_FALSE(dq.push_private(&items[2]));
  EXPECT_EQ(dq.size(), 1u);
  EXPECT_EQ(dq.private_size(), 2u);
  EXPECT_EQ(dq.steal(), &items[0]);
  EXPECT_EQ(dq.steal(), nullptr) << "a thief took a private item";
  EXPECT_TRUE(dq.empty());
  // The public part ran dry: this push publishes the older half of the three private items.
  EXPECT_TRUE(dq.push_private(&items[3]));
  EXPECT_EQ(dq.size(), 2u);
  EXPECT_EQ(dq.private_size(), 1u);
  EXPECT_EQ(dq.steal(), &items[1]);
  EXPECT_EQ(dq.steal(), &items[2]);
  EXPECT_EQ(dq.steal(), nullptr);
  EXPECT_EQ(dq.pop(), &items[3]);
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_TRUE(dq.empty());
  EXPECT_EQ(dq.private_size(), 0u);
}

TEST(WorkDeque, PopTakesPrivateAndPublicItemsNewestFirst) {
  std::vector<item> items = make_items(6);
  work_deque<item*> dq;
  EXPECT_TRUE(dq.push_private(&items[0]));  // public
  EXPECT_FALSE(dq.push_private(&items[1]));
  dq.push(&items[2]);  // publishes item 1 too
  EXPECT_EQ(dq.private_size(), 0u);
  EXPECT_EQ(dq.size(), 3u);
  EXPECT_FALSE(dq.push_private(&items[3]));
  EXPECT_FALSE(dq.push_private(&items[4]));
  EXPECT_FALSE(dq.push_private(&items[5]));
  for (std::size_t i = 6; i-- > 0;) {
    EXPECT_EQ(dq.pop(), &items[i]);
  }
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_TRUE(dq.empty());
}

TEST(WorkDeque, PublicPushPublishesThePrivateItemsBelowIt) {
  std::vector<item> items = make_items(4);
  work_deque<item*> dq;
  EXPECT_TRUE(dq.push_private(&items[0]));
  EXPECT_FALSE(dq.push_private(&items[1]));
  EXPECT_FALSE(dq.push_private(&items[2]));
  dq.push(&items[3]);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(dq.steal(), &items[i]);
  }
  EXPECT_EQ(dq.steal(), nullptr);
  EXPECT_EQ(dq.pop(), nullptr);
}

TEST(WorkDeque, PrivatePushesBeyondTheirArrayPublishTheOlderHalf) {
  // The private items live in an array of private_capacity; a push that finds it full publishes
  // its older half (private_capacity / 2 items) and returns true, as a publishing push does.
  constexpr auto cap = static_cast<std::size_t>(work_deque<item*>::private_capacity);
  static_assert(cap % 2 == 0);
  std::vector<item> items = make_items(1 + 2 * cap);
  work_deque<item*> dq{2};
  std::vector<std::size_t> publishing;
  for (item& it : items) {
    if (dq.push_private(&it)) publishing.push_back(it.id);
  }
  // Item 0 published itself (nothing was public). Items 1..cap filled the array, so item cap + 1
  // published items 1..cap/2; cap / 2 pushes later the array was full again.
  const std::vector<std::size_t> expected{0, cap + 1, cap + 1 + cap / 2};
  EXPECT_EQ(publishing, expected);
  const std::size_t published = 1 + 2 * (cap / 2);
  EXPECT_EQ(dq.size(), published);
  EXPECT_EQ(dq.private_size(), items.size() - published);
  EXPECT_GE(dq.capacity(), published) << "the ring grew for what was published";
  // Thieves get the published items oldest first; the owner pops the rest newest first.
  for (std::size_t i = 0; i < published; ++i) {
    ASSERT_EQ(dq.steal(), &items[i]);
  }
  EXPECT_EQ(dq.steal(), nullptr) << "a thief took a private item";
  for (std::size_t i = items.size(); i-- > published;) {
    ASSERT_EQ(dq.pop(), &items[i]);
  }
  EXPECT_EQ(dq.pop(), nullptr);
  EXPECT_TRUE(dq.empty());
}

TEST(WorkDeque, PublishAllMovesEveryPrivateItemOldestFirst) {
  std::vector<item> items = make_items(5);
  work_deque<item*> dq{2};
  EXPECT_FALSE(dq.publish_all()) << "nothing private";
  EXPECT_TRUE(dq.push_private(&items[0]));  // public: nothing was
  for (std::size_t i = 1; i < 5; ++i) EXPECT_FALSE(dq.push_private(&items[i]));
  EXPECT_EQ(dq.private_size(), 4u);
  EXPECT_TRUE(dq.publish_all());
  EXPECT_EQ(dq.private_size(), 0u);
  EXPECT_EQ(dq.size(), 5u);
  EXPECT_GE(dq.capacity(), 5u);
  EXPECT_EQ(dq.steal(), &items[0]);
  EXPECT_EQ(dq.steal(), &items[1]);
  EXPECT_EQ(dq.pop(), &items[4]);
  EXPECT_EQ(dq.pop(), &items[3]);
  EXPECT_EQ(dq.steal(), &items[2]);
  EXPECT_EQ(dq.pop(), nullptr);
}

// ---- owner against thieves --------------------------------------------------------------------

// Steals until `drained` is set and the deque is empty, recording the ids taken.
// Every taker waits at it until all have arrived. Not std::latch, whose
// wait (libstdc++ 12 without a platform wait, as for MinGW) hung these
// tests under wine.
class start_line {
 public:
  explicit start_line(std::size_t takers) : takers_(takers) {}
  void arrive_and_wait() {
    // seq_cst (the default) and spinning: a start line, nothing published.
    arrived_.fetch_add(1);
    while (arrived_.load() < takers_) std::this_thread::yield();
  }

 private:
  const std::size_t takers_;
  std::atomic<std::size_t> arrived_{0};
};

void run_thief(work_deque<item*>& dq, const std::atomic<bool>& drained,
               std::vector<std::size_t>& taken) {
  for (;;) {
    if (item* it = dq.steal()) {
      taken.push_back(it->id);
    } else if (drained.load(std::memory_order_acquire)) {
      return;
    } else {
      std::this_thread::yield();
    }
  }
}

// Skips a test whose takers race through the deque's store-load pairs when
// the emulator it runs under does not keep a seq_cst store before a later
// seq_cst load (support/litmus.hpp): there, items are taken twice for the
// emulator's sake, not the deque's.
void skip_under_a_reordering_emulator() {
  if (weft::test::emulator_breaks_store_buffering()) {
    GTEST_SKIP() << "the emulator let a seq_cst load pass an earlier seq_cst store "
                    "(support/litmus.hpp)";
  }
}

class WorkDequeThieves : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { skip_under_a_reordering_emulator(); }
};

INSTANTIATE_TEST_SUITE_P(Thieves, WorkDequeThieves, ::testing::Values(1, 2, 4, 8),
                         ::testing::PrintToStringParamName());

// Pops up to `count` items into `popped`; false if one was not below the one popped before it
// (the owner must pop in reverse push order).
bool pop_in_reverse_order(work_deque<item*>& dq, int count, std::vector<std::size_t>& popped) {
  bool in_order = true;
  const item* previous = nullptr;
  for (; count > 0; --count) {
    item* it = dq.pop();
    if (it == nullptr) {
      break;
    }
    in_order = in_order && (previous == nullptr || it->id < previous->id);
    previous = it;
    popped.push_back(it->id);
  }
  return in_order;
}

// The owner's pops came in reverse push order, and each thief's steals in push order (the
// owner's list is the last of `taken`).
void expect_orders(bool pops_in_order, const std::vector<std::vector<std::size_t>>& taken) {
  EXPECT_TRUE(pops_in_order) << "the owner popped items out of reverse push order";
  for (std::size_t i = 0; i + 1 < taken.size(); ++i) {
    expect_increasing(taken[i]);
  }
}

// The owner pushes and pops random bursts while the thieves steal.
// Runs owner(popped) on this thread while `thieves` threads steal until it has returned and the
// deque is drained; returns what each taker got (the owner's pops last) after checking that every
// one of the n items was taken exactly once.
template <class Owner>
std::vector<std::vector<std::size_t>> take_with_thieves(work_deque<item*>& dq, std::size_t thieves,
                                                        std::size_t n, Owner owner) {
  std::atomic<bool> drained{false};
  std::vector<std::vector<std::size_t>> taken(thieves + 1);
  start_line start{thieves + 1};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < thieves; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      run_thief(dq, drained, taken[i]);
    });
  }
  std::vector<std::size_t>& popped = taken[thieves];
  start.arrive_and_wait();
  owner(popped);
  while (item* it = dq.pop()) {
    popped.push_back(it->id);
  }
  drained.store(true, std::memory_order_release);
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_TRUE(dq.empty());
  expect_each_taken_once(n, taken);
  return taken;
}

TEST_P(WorkDequeThieves, EveryItemTakenExactlyOnce) {
  const auto thieves = static_cast<std::size_t>(GetParam());
  const std::size_t n = scaled(200'000, 1000);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " items");
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{64};
  bool pops_in_order = true;
  const auto taken = take_with_thieves(dq, thieves, n, [&](std::vector<std::size_t>& popped) {
    std::mt19937 rng{seed};
    // Pop bursts are a little shorter than push bursts: the deque often runs empty at the
    // owner's end, and the thieves still have items to take.
    std::uniform_int_distribution<int> push_burst{0, 64};
    std::uniform_int_distribution<int> pop_burst{0, 48};
    std::size_t next = 0;
    while (next < n) {
      for (int k = push_burst(rng); k > 0 && next < n; ++next, --k) {
        push_fresh(dq, items[next], next);
      }
      // Between pushes, the owner's pops go down the deque: each id is below the previous one.
      pops_in_order = pop_in_reverse_order(dq, pop_burst(rng), popped) && pops_in_order;
    }
  });
  expect_orders(pops_in_order, taken);
  RecordProperty("stolen", std::to_string(n - taken[thieves].size()));
}

// The same with the owner publishing its bursts through push_many().
TEST_P(WorkDequeThieves, PushManyItemsAreTakenExactlyOnce) {
  const auto thieves = static_cast<std::size_t>(GetParam());
  const std::size_t n = scaled(200'000, 1000);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " items");
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{4};
  take_with_thieves(dq, thieves, n, [&](std::vector<std::size_t>& popped) {
    std::mt19937 rng{seed};
    std::uniform_int_distribution<std::size_t> burst{0, 100};
    std::vector<item*> batch;
    std::size_t next = 0;
    while (next < n) {
      batch.clear();
      for (std::size_t k = burst(rng); k > 0 && next < n; ++next, --k) {
        items[next].id = next;
        batch.push_back(&items[next]);
      }
      dq.push_many(batch.data(), batch.size());
      for (std::size_t k = burst(rng) / 2; k > 0; --k) {
        item* it = dq.pop();
        if (it == nullptr) {
          break;
        }
        popped.push_back(it->id);
      }
    }
  });
}

// The owner mixes private pushes (publishing when the thieves have emptied the public part),
// public pushes and pops, as fork-join code with spawned jobs does.
TEST_P(WorkDequeThieves, PrivateItemsAreTakenExactlyOnce) {
  const auto thieves = static_cast<std::size_t>(GetParam());
  const std::size_t n = scaled(200'000, 1000);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " items");
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{4};
  bool pops_in_order = true;
  std::size_t published = 0;
  const auto taken = take_with_thieves(dq, thieves, n, [&](std::vector<std::size_t>& popped) {
    std::mt19937 rng{seed};
    std::uniform_int_distribution<int> push_burst{0, 64};
    std::uniform_int_distribution<int> pop_burst{0, 48};
    std::bernoulli_distribution public_push{0.05};
    std::size_t next = 0;
    while (next < n) {
      for (int k = push_burst(rng); k > 0 && next < n; ++next, --k) {
        items[next].id = next;
        if (public_push(rng)) {
          dq.push(&items[next]);
        } else if (dq.push_private(&items[next])) {
          ++published;
        }
      }
      pops_in_order = pop_in_reverse_order(dq, pop_burst(rng), popped) && pops_in_order;
    }
  });
  expect_orders(pops_in_order, taken);
  RecordProperty("stolen", std::to_string(n - taken[thieves].size()));
  RecordProperty("publications", std::to_string(published));
}

// The deque starts at capacity 2 and the owner only pushes while the thieves steal, so it grows
// many times under their feet. The thieves take at most about half of what was pushed, which
// keeps the deque growing however fast they are.
TEST_P(WorkDequeThieves, GrowthWhileStealingKeepsEveryItem) {
  const auto thieves = static_cast<std::size_t>(GetParam());
  const std::size_t n = scaled(200'000, 1000);
  SCOPED_TRACE(std::to_string(n) + " items");
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{2};
  std::atomic<std::size_t> pushed{0};
  std::atomic<std::size_t> stolen{0};
  std::atomic<bool> pushing_done{false};
  std::atomic<bool> drained{false};
  std::vector<std::vector<std::size_t>> taken(thieves + 1);
  start_line start{thieves + 1};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < thieves; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      while (!pushing_done.load(std::memory_order_relaxed)) {
        if (2 * stolen.load(std::memory_order_relaxed) >= pushed.load(std::memory_order_relaxed)) {
          std::this_thread::yield();
        } else if (item* it = dq.steal()) {
          taken[i].push_back(it->id);
          stolen.fetch_add(1, std::memory_order_relaxed);
        }
      }
      run_thief(dq, drained, taken[i]);
    });
  }

  start.arrive_and_wait();
  std::size_t growths = 0;
  std::size_t capacity = dq.capacity();
  for (std::size_t i = 0; i < n; ++i) {
    push_fresh(dq, items[i], i);
    pushed.store(i + 1, std::memory_order_relaxed);
    if (dq.capacity() != capacity) {
      ++growths;
      capacity = dq.capacity();
    }
  }
  // Each thief overshoots the half by at most one item.
  EXPECT_GE(dq.capacity(), n / 2 - thieves);
  RecordProperty("growths", std::to_string(growths));
  RecordProperty("stolen_while_pushing", std::to_string(stolen.load()));
  pushing_done.store(true, std::memory_order_relaxed);
  while (item* it = dq.pop()) {
    taken[thieves].push_back(it->id);
  }
  drained.store(true, std::memory_order_release);
  for (std::thread& t : threads) {
    t.join();
  }

  EXPECT_TRUE(dq.empty());
  for (std::size_t i = 0; i < thieves; ++i) {
    expect_increasing(taken[i]);
  }
  expect_each_taken_once(n, taken);
}

// Rounds of a close race at the bottom of the deque: the owner pushes a few items and pops until
// the deque is empty, while each thief steals until it comes back empty-handed. Everyone goes
// after a random delay. In rounds the owner leads, it pops as soon as it has pushed; in the others
// it waits until every thief has seen the round's items. On parallel cores both kinds of rounds
// race closely; on a busy machine each side still wins some rounds.
struct race_shape {
  std::size_t items;    // pushed per round
  std::size_t thieves;  // stealing threads
  bool private_pushes;  // push_private() instead of push(): the first is published at once,
                        // the others stay private, and the owner's pops reach the public one
};

void PrintTo(const race_shape& shape, std::ostream* out) {
  *out << shape.items << " items, " << shape.thieves << " thieves"
       << (shape.private_pushes ? ", private pushes" : "");
}

class WorkDequeRace : public ::testing::TestWithParam<race_shape> {
 protected:
  void SetUp() override { skip_under_a_reordering_emulator(); }
};

INSTANTIATE_TEST_SUITE_P(Shapes, WorkDequeRace,
                         ::testing::Values(race_shape{1, 1, false}, race_shape{2, 1, false},
                                           race_shape{2, 2, false}, race_shape{1, 1, true},
                                           race_shape{3, 1, true}, race_shape{3, 2, true}),
                         [](const ::testing::TestParamInfo<race_shape>& info) {
                           return std::to_string(info.param.items) + "_items_" +
                                  std::to_string(info.param.thieves) + "_thieves" +
                                  (info.param.private_pushes ? "_private" : "");
                         });

// With one item and one thief, this is the race for the last item between pop() and steal().
// With private pushes, the owner's pops end with the race for the one published item.
TEST_P(WorkDequeRace, LastItemsGoToExactlyOneTaker) {
  const race_shape shape = GetParam();
  const std::size_t rounds = scaled(10'000, 200);
  const std::size_t n = rounds * shape.items;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(rounds) + " rounds");
  std::vector<item> items = make_items(n);
  work_deque<item*> dq{2};
  std::mt19937 rng{seed};
  std::vector<char> owner_leads(rounds);
  for (char& leads : owner_leads) {
    leads = static_cast<char>(std::bernoulli_distribution{0.5}(rng));
  }
  std::vector<std::vector<std::size_t>> taken(shape.thieves + 1);
  // Round bookkeeping only, all relaxed: the deque alone must order each push before the take.
  std::atomic<std::size_t> pushed{0};    // rounds whose items the owner has pushed
  std::atomic<std::size_t> ready{0};     // thief-rounds in which the thief is about to steal
  std::atomic<std::size_t> finished{0};  // thief-rounds in which the thief has stopped stealing
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < shape.thieves; ++i) {
    threads.emplace_back([&, i] {
      std::mt19937 thief_rng{seed + 1 + static_cast<unsigned>(i)};
      for (std::size_t r = 0; r < rounds; ++r) {
        spin_until([&] { return pushed.load(std::memory_order_relaxed) > r; });
        ready.fetch_add(1, std::memory_order_relaxed);
        short_delay(thief_rng);
        while (item* it = dq.steal()) {
          taken[i].push_back(it->id);
        }
        finished.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }

  std::vector<std::size_t>& popped = taken[shape.thieves];
  std::size_t next = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < shape.items; ++i, ++next) {
      if (shape.private_pushes) {
        items[next].id = next;
        (void)dq.push_private(&items[next]);
      } else {
        push_fresh(dq, items[next], next);
      }
    }
    pushed.store(r + 1, std::memory_order_relaxed);
    const std::size_t all_thieves = (r + 1) * shape.thieves;
    if (owner_leads[r] == 0) {
      spin_until([&] { return ready.load(std::memory_order_relaxed) == all_thieves; });
    }
    short_delay(rng);
    while (item* it = dq.pop()) {
      popped.push_back(it->id);
    }
    spin_until([&] { return finished.load(std::memory_order_relaxed) == all_thieves; });
  }
  for (std::thread& t : threads) {
    t.join();
  }

  EXPECT_TRUE(dq.empty());
  for (std::size_t i = 0; i < shape.thieves; ++i) {
    expect_increasing(taken[i]);
  }
  RecordProperty("stolen", std::to_string(n - popped.size()));
  expect_each_taken_once(n, taken);
}

}  // namespace
