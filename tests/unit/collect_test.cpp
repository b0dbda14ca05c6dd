// weft::collect and weft::collector (results in spawn order, terminate_with,
// exceptions, nesting, sequential order), over 0, 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class collect_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::error_count;

TEST_P(collect_test, results_come_in_spawn_order) {
  weft::pool pool{options()};
  const int n = static_cast<int>(weft::test::scaled(10'000, 100));
  const std::vector<int> r = weft::collect<int>(pool, [n](weft::collector<int>& c) {
    for (int i = 0; i < n; ++i) c.spawn([i] { return i * 3; });
  });
  ASSERT_EQ(r.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(r[static_cast<std::size_t>(i)], i * 3);
}

// Jobs spawn children into the collector, as a random tree; every spawn is
// logged under a lock held around it, so the log is the spawn order.
TEST_P(collect_test, order_of_results_over_random_spawn_trees) {
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(20, 2);
  for (std::size_t round = 0; round < rounds; ++round) {
    std::mutex log_mutex;
    std::vector<std::uint64_t> log;
    std::atomic<std::uint64_t> next_id{0};
    const std::uint64_t budget = weft::test::scaled(3'000, 100);
    struct node {
      std::mutex* m;
      std::vector<std::uint64_t>* log;
      std::atomic<std::uint64_t>* next;
      std::uint64_t budget;
      std::uint64_t salt;
      // Spawns one job, logged, which returns its id and spawns 0 to 3
      // children while the budget lasts.
      void spawn(weft::collector<std::uint64_t>& c) const {
        const std::lock_guard lock{*m};
        const std::uint64_t id = next->fetch_add(1);
        log->push_back(id);
        c.spawn([self = *this, id](weft::collector<std::uint64_t>& cc) {
          const std::uint64_t children = weft::test::mix(id ^ self.salt) % 4;
          for (std::uint64_t k = 0; k < children; ++k) {
            if (self.next->load() >= self.budget) break;
            self.spawn(cc);
          }
          return id;
        });
      }
    };
    const node root{&log_mutex, &log, &next_id, budget, round * 7919};
    const std::vector<std::uint64_t> r =
        weft::collect<std::uint64_t>(pool, [&](weft::collector<std::uint64_t>& c) {
          for (int i = 0; i < 4; ++i) root.spawn(c);
        });
    EXPECT_EQ(r, log) << "round " << round;
  }
}

TEST_P(collect_test, results_need_not_be_default_constructible) {
  struct value {
    explicit value(int x) : v(x) {}
    int v;
  };
  weft::pool pool{options()};
  const std::vector<value> r = weft::collect<value>(pool, [](weft::collector<value>& c) {
    for (int i = 0; i < 100; ++i) c.spawn([i] { return value{i}; });
  });
  ASSERT_EQ(r.size(), 100U);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r[static_cast<std::size_t>(i)].v, i);
}

TEST_P(collect_test, empty_body_gives_an_empty_vector) {
  weft::pool pool{options()};
  EXPECT_TRUE(weft::collect<int>(pool, [](weft::collector<int>&) {}).empty());
}

// The Haskell seed's "find the 10th letter": one job terminates, and only
// its value comes back.
TEST_P(collect_test, terminate_with_returns_exactly_its_value) {
  weft::pool pool{options()};
  const std::vector<char> r = weft::collect<char>(pool, [](weft::collector<char>& c) {
    for (int i = 0; i < 26; ++i) {
      c.spawn([i](weft::collector<char>& cc) {
        const char letter = static_cast<char>('a' + i);
        if (i == 9) cc.terminate_with(letter);
        return letter;
      });
    }
  });
  EXPECT_EQ(r, std::vector<char>{'j'});
}

// Several terminators race with each other and with the other jobs
// completing: collect returns the value of the one whose call decided, and
// every job that started has finished by then.
TEST_P(collect_test, terminate_with_races_with_completion) {
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(300, 20);
  for (std::size_t round = 0; round < rounds; ++round) {
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::atomic<int> winner{-1};
    const int n = 64;
    const std::vector<int> r = weft::collect<int>(pool, [&](weft::collector<int>& c) {
      for (int i = 0; i < n; ++i) {
        c.spawn([&, i](weft::collector<int>& cc) {
          started.fetch_add(1);
          // The last few jobs terminate: they race with the others, and
          // with each other.
          if (i >= n - 3 && cc.terminate_with(1000 + i)) winner.store(1000 + i);
          finished.fetch_add(1);
          return i;
        });
      }
    });
    ASSERT_NE(winner.load(), -1) << "round " << round;
    EXPECT_EQ(r, std::vector<int>{winner.load()}) << "round " << round;
    EXPECT_EQ(started.load(), finished.load()) << "round " << round;
  }
}

// terminate_with and exceptions race: whichever comes first decides; the
// exceptions after it reach the pool's error path, none is lost.
TEST_P(collect_test, terminate_with_races_with_exceptions) {
  error_count errors;
  weft::pool pool{errors.options(GetParam())};
  const std::size_t rounds = weft::test::scaled(300, 20);
  int terminated_rounds = 0;
  int thrown_rounds = 0;
  for (std::size_t round = 0; round < rounds; ++round) {
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::atomic<int> thrown{0};
    std::atomic<int> winner{-1};
    const int before = errors.n.load();
    const int n = 32;
    std::vector<int> r;
    bool threw = false;
    try {
      r = weft::collect<int>(pool, [&](weft::collector<int>& c) {
        for (int i = 0; i < n; ++i) {
          c.spawn([&, i](weft::collector<int>& cc) {
            struct count_finish {
              std::atomic<int>& f;
              ~count_finish() { f.fetch_add(1); }
            } const guard{finished};
            started.fetch_add(1);
            if (i % 8 == 7) {
              if (cc.terminate_with(i)) winner.store(i);
            } else if (i % 8 == 3) {
              thrown.fetch_add(1);
              throw std::runtime_error("job " + std::to_string(i));
            }
            return i;
          });
        }
      });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    EXPECT_EQ(started.load(), finished.load()) << "round " << round;
    const int reported = errors.n.load() - before;
    if (threw) {
      ++thrown_rounds;
      EXPECT_EQ(winner.load(), -1) << "round " << round;
      EXPECT_EQ(reported, thrown.load() - 1) << "round " << round;
    } else {
      ++terminated_rounds;
      ASSERT_NE(winner.load(), -1) << "round " << round;
      EXPECT_EQ(r, std::vector<int>{winner.load()}) << "round " << round;
      EXPECT_EQ(reported, thrown.load()) << "round " << round;
    }
  }
  EXPECT_EQ(terminated_rounds + thrown_rounds, static_cast<int>(rounds));
}

TEST_P(collect_test, first_exception_skips_the_rest_and_is_rethrown) {
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  const int n = 1000;
  try {
    (void)weft::collect<int>(pool, [&](weft::collector<int>& c) {
      c.spawn([]() -> int { throw std::runtime_error("first"); });
      for (int i = 0; i < n; ++i) {
        c.spawn([&, i] {
          ran.fetch_add(1);
          return i;
        });
      }
    });
    FAIL() << "the exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "first");
  }
  if (GetParam() == 0) {
    EXPECT_EQ(ran.load(), 0);  // spawn order: all skipped
  }
  EXPECT_LE(ran.load(), n);
}

TEST_P(collect_test, the_bodys_exception_waits_for_the_jobs) {
  weft::pool pool{options()};
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  EXPECT_THROW((void)weft::collect<int>(pool,
                                        [&](weft::collector<int>& c) {
                                          for (int i = 0; i < 100; ++i) {
                                            c.spawn([&, i] {
                                              started.fetch_add(1);
                                              std::this_thread::sleep_for(10us);
                                              finished.fetch_add(1);
                                              return i;
                                            });
                                          }
                                          throw std::logic_error("body");
                                        }),
               std::logic_error);
  EXPECT_EQ(started.load(), finished.load());
}

TEST_P(collect_test, running_jobs_see_stop_requested) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs no job while the body runs";
  weft::pool pool{options()};
  std::atomic<bool> running{false};
  std::atomic<bool> saw_stop{false};
  const std::vector<int> r = weft::collect<int>(pool, [&](weft::collector<int>& c) {
    c.spawn([&](weft::collector<int>& cc) {
      running.store(true);
      const auto give_up = std::chrono::steady_clock::now() + 20s;
      while (!cc.stop_requested() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
      saw_stop.store(cc.stop_requested());
      return 1;
    });
    while (!running.load()) std::this_thread::yield();
    EXPECT_TRUE(c.terminate_with(42));
    EXPECT_FALSE(c.terminate_with(43));  // decided already
  });
  EXPECT_EQ(r, std::vector<int>{42});
  EXPECT_TRUE(saw_stop.load());
}

// A spawn that fails (here: copying the callable throws) decides the
// outcome with its exception and rethrows it; the body that lets it through
// hands back the same exception, which is not reported a second time.
TEST_P(collect_test, a_failed_spawn_decides_and_is_not_reported_twice) {
  struct throws_on_copy {
    throws_on_copy() = default;
    throws_on_copy(const throws_on_copy& /*other*/) { throw std::runtime_error("copy"); }
    throws_on_copy(throws_on_copy&&) noexcept = default;
    throws_on_copy& operator=(const throws_on_copy&) = delete;
    throws_on_copy& operator=(throws_on_copy&&) = delete;
    ~throws_on_copy() = default;
    int operator()() const { return 1; }
  };
  error_count errors;
  weft::pool pool{errors.options(GetParam())};
  std::atomic<int> ran{0};
  try {
    (void)weft::collect<int>(pool, [&](weft::collector<int>& c) {
      c.spawn([&] { return ran.fetch_add(1); });
      const throws_on_copy f;
      c.spawn(f);
      ADD_FAILURE() << "spawn did not throw";
    });
    FAIL() << "the exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "copy");
  }
  pool.wait();
  EXPECT_EQ(errors.n.load(), 0);
}

// An exception after the outcome was decided goes to the pool's error path.
TEST_P(collect_test, a_later_exception_reaches_the_error_path) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs no job while the body runs";
  error_count errors;
  weft::pool pool{errors.options(GetParam())};
  try {
    (void)weft::collect<int>(pool, [&](weft::collector<int>& c) {
      c.spawn([]() -> int { throw std::runtime_error("job"); });
      while (!c.stop_requested()) std::this_thread::yield();
      throw std::logic_error("body");
    });
    FAIL() << "the exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "job");
  }
  EXPECT_EQ(errors.n.load(), 1);  // the body's
}

TEST_P(collect_test, collect_nests_inside_collect) {
  weft::pool pool{options()};
  const int outer = 16;
  const int inner = static_cast<int>(weft::test::scaled(200, 10));
  const std::vector<long> r = weft::collect<long>(pool, [&](weft::collector<long>& c) {
    for (int i = 0; i < outer; ++i) {
      c.spawn([&pool, i, inner] {
        const std::vector<int> v = weft::collect<int>(pool, [&](weft::collector<int>& cc) {
          for (int j = 0; j < inner; ++j) cc.spawn([i, j] { return i * 1000 + j; });
        });
        long sum = 0;
        for (std::size_t j = 0; j < v.size(); ++j) {
          EXPECT_EQ(v[j], i * 1000 + static_cast<int>(j));
          sum += v[j];
        }
        return sum;
      });
    }
  });
  ASSERT_EQ(r.size(), static_cast<std::size_t>(outer));
  for (int i = 0; i < outer; ++i) {
    const long expected =
        static_cast<long>(i) * 1000 * inner + static_cast<long>(inner) * (inner - 1) / 2;
    EXPECT_EQ(r[static_cast<std::size_t>(i)], expected);
  }
}

INSTANTIATE_TEST_SUITE_P(workers, collect_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

// Sequential mode runs the jobs in spawn order, nested spawns included.
TEST(collect_sequential, jobs_run_in_spawn_order) {
  weft::pool pool{{.threads = 0}};
  std::vector<int> spawned;
  std::vector<int> ran;
  int next = 0;
  struct spawner {
    std::vector<int>* spawned;
    std::vector<int>* ran;
    int* next;
    void operator()(weft::collector<int>& c, int depth) const {
      const int id = (*next)++;
      spawned->push_back(id);
      c.spawn([self = *this, id, depth](weft::collector<int>& cc) {
        self.ran->push_back(id);
        if (depth < 3) {
          self(cc, depth + 1);
          self(cc, depth + 1);
        }
        return id;
      });
    }
  };
  const spawner s{&spawned, &ran, &next};
  const std::vector<int> r = weft::collect<int>(pool, [&](weft::collector<int>& c) {
    for (int i = 0; i < 3; ++i) s(c, 0);
  });
  EXPECT_EQ(ran, spawned);
  EXPECT_EQ(r, spawned);
  EXPECT_EQ(spawned.size(), 3U * 15U);
}

}  // namespace
