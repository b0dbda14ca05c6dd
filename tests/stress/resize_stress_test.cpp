// Resize storms (docs/control.md, "Resizing"): two threads resize the pool
// between 1 and 8 workers at random times while outside threads send every
// kind of work (spawn, submit and get, spawn_on, task groups, graph runs,
// fork-join, jobs that spawn children into their worker's deque). Every job
// runs exactly once, every index is a valid slot, and nothing hangs.
// Iteration counts scale with WEFT_STRESS_SCALE.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <random>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

TEST(resize_stress, every_job_runs_once_while_the_pool_grows_and_shrinks) {
  constexpr std::size_t most = 8;
  weft::pool pool{{.threads = 2, .max_threads = most}};
  const std::size_t per_sender = weft::test::scaled(80000, 1000);
  const std::size_t resizes = weft::test::scaled(1000, 100);
  constexpr int senders = 4;

  std::atomic<std::size_t> sent{0};       // jobs sent
  std::atomic<std::size_t> ran{0};        // jobs that ran
  std::atomic<std::size_t> bad_index{0};  // this_worker::index() outside slots()
  std::atomic<std::size_t> refused{0};    // spawn_on to a worker that had just left
  std::atomic<std::size_t> resized{0};
  std::atomic<bool> senders_done{false};
  auto job = [&] {
    const std::optional<std::size_t> i = weft::this_worker::index();
    if (!i || *i >= pool.slots()) bad_index.fetch_add(1);
    ran.fetch_add(1);
  };

  std::vector<std::thread> resizers;
  for (int r = 0; r < 2; ++r) {
    resizers.emplace_back([&, r] {
      std::mt19937 rng{static_cast<unsigned>(r) + 77};
      // Both keep going until the senders are done, and together make at
      // least `resizes` calls.
      while (resized.load() < resizes || !senders_done.load()) {
        pool.resize(1 + rng() % most);
        resized.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds{rng() % 400});
      }
    });
  }

  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      std::mt19937 rng{static_cast<unsigned>(s) + 1};
      weft::graph g;  // one per sender: a graph runs once at a time
      auto a = g.emplace(job);
      auto b = g.emplace(job);
      a.precede(b);
      for (std::size_t i = 0; i < per_sender; ++i) {
        switch (rng() % 7) {
          case 0:
            sent.fetch_add(1);
            pool.spawn(job);
            break;
          case 1: {
            sent.fetch_add(1);
            auto f = pool.submit([&] {
              job();
              return 1;
            });
            EXPECT_EQ(f.get(), 1);
            break;
          }
          case 2: {
            const std::size_t w = rng() % most;
            sent.fetch_add(1);
            try {
              pool.spawn_on(w, job);
            } catch (const weft::usage_error&) {
              refused.fetch_add(1);  // w >= size() when it was sent
            }
            break;
          }
          case 3: {
            weft::task_group tg{pool};
            sent.fetch_add(4);
            for (int k = 0; k < 4; ++k) tg.spawn(job);
            tg.wait();
            break;
          }
          case 4:
            sent.fetch_add(2);
            pool.run(g).get();
            break;
          case 5: {
            // Children queued on whichever worker runs the parent: a
            // leaving worker hands them on.
            sent.fetch_add(11);
            pool.spawn([&] {
              for (int k = 0; k < 10; ++k) pool.spawn(job);
              job();
            });
            break;
          }
          default: {
            sent.fetch_add(3);
            pool.submit([&] {
                  weft::join([&] { job(); }, [&] { job(); });
                  job();
                })
                .get();
            break;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  senders_done.store(true);
  for (auto& t : resizers) t.join();
  pool.wait();

  EXPECT_EQ(bad_index.load(), 0U);
  EXPECT_EQ(ran.load() + refused.load(), sent.load()) << "a job was lost or ran twice";
  EXPECT_GE(resized.load(), resizes);
  RecordProperty("jobs", std::to_string(ran.load()));
  RecordProperty("resizes", std::to_string(resized.load()));
}

}  // namespace
