// weft::flow under load: random programs checked against a sequential run
// (also at random wait(x) points), exceptions at random tasks, cancel racing
// with execution, and memory that stays flat over millions of tasks.
// Iteration counts scale with WEFT_STRESS_SCALE.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

class flow_stress : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::mix;

// ---------------------------------------------------------------------------
// Random programs

constexpr std::size_t max_accesses = 5;
constexpr std::size_t mode_count = 5;
constexpr std::size_t object_count = 8;

// The access modes of a task's declaration, sorted, and whether it ends
// with an after(): emplace needs them at compile time, so every shape a
// program may use is instantiated once and picked from a table.
struct shape {
  std::array<weft::access_mode, max_accesses> modes{};
  std::size_t size = 0;
  bool after = false;
};

// Every multiset of 1 to 5 modes without after(), and of 0 to 2 modes with.
constexpr std::size_t shape_count = (5 + 15 + 35 + 70 + 126) + (1 + 5 + 15);

constexpr std::array<shape, shape_count> make_shapes() {
  std::array<shape, shape_count> out{};
  std::size_t n = 0;
  auto add_sizes = [&](std::size_t from, std::size_t to, bool after) {
    for (std::size_t size = from; size <= to; ++size) {
      std::array<std::size_t, max_accesses> m{};  // non-decreasing mode indices
      for (;;) {
        shape s;
        s.size = size;
        s.after = after;
        for (std::size_t i = 0; i < size; ++i) s.modes[i] = static_cast<weft::access_mode>(m[i]);
        out[n++] = s;
        std::size_t i = size;
        while (i > 0 && m[i - 1] == mode_count - 1) --i;
        if (i == 0) break;
        ++m[i - 1];
        for (std::size_t j = i; j < size; ++j) m[j] = m[i - 1];
      }
    }
  };
  add_sizes(1, max_accesses, false);
  add_sizes(0, 2, true);
  if (n != shape_count) throw std::logic_error("shape_count is wrong");
  return out;
}

constexpr std::array<shape, shape_count> shapes = make_shapes();

struct access_spec {
  std::size_t object = 0;
  weft::access_mode mode = weft::access_mode::read;
};

struct task_spec {
  std::size_t index = 0;  // position in the program
  std::uint64_t salt = 0;
  std::size_t shape = 0;
  std::array<access_spec, max_accesses> accesses{};  // sorted by mode
  std::size_t count = 0;
  std::size_t after = 0;  // an earlier task, when the shape has after()
  bool throws = false;
};

bool conflict(weft::access_mode a, weft::access_mode b) {
  return a != b || a == weft::access_mode::write;
}

// What a task does to the objects it declared, reached through `p` in
// declaration order (for reduce: the private copy). Reads and the old
// values of written objects feed one hash; the other modes add an amount
// derived from it, so that their effect does not depend on the order in
// which the members of a run go.
void apply(const task_spec& t, std::uint64_t* const* p) {
  std::uint64_t h = mix(t.salt);
  for (std::size_t i = 0; i < t.count; ++i) {
    const weft::access_mode m = t.accesses[i].mode;
    if (m == weft::access_mode::read || m == weft::access_mode::write) h = mix(h ^ *p[i]);
  }
  for (std::size_t i = 0; i < t.count; ++i) {
    switch (t.accesses[i].mode) {
      case weft::access_mode::read:
        break;
      case weft::access_mode::write:
        *p[i] = mix(h + i);
        break;
      case weft::access_mode::commute:
        *p[i] += mix(h ^ (0x100 + i));  // plain: two at once would be a data race
        break;
      case weft::access_mode::concurrent:
        weft::test::atomic_add(*p[i], mix(h ^ (0x200 + i)), __ATOMIC_RELAXED);
        break;
      case weft::access_mode::reduce:
        *p[i] += mix(h ^ (0x300 + i));
        break;
    }
  }
}

// What the tasks of a run record.
struct run_log {
  explicit run_log(std::size_t n) : ran(n) {}
  std::vector<std::atomic<bool>> ran;
  std::atomic<bool> throwing{false};
};

struct task_failure : std::runtime_error {
  explicit task_failure(std::size_t i) : std::runtime_error("task failed"), index(i) {}
  std::size_t index;
};

// The callable of every random task: hands the declared objects to apply().
struct task_body {
  const task_spec* spec;
  run_log* log;

  template <class... A>
  void operator()(A&... args) const {
    if (log != nullptr) {
      log->ran[spec->index].store(true, std::memory_order_relaxed);
      if (spec->throws && log->throwing.load(std::memory_order_relaxed)) {
        throw task_failure(spec->index);
      }
    }
    std::array<std::uint64_t*, sizeof...(A) + 1> p{const_cast<std::uint64_t*>(&args)..., nullptr};
    apply(*spec, p.data());
  }
};

template <weft::access_mode M>
auto declare(std::uint64_t& x) {
  if constexpr (M == weft::access_mode::read) {
    return weft::read(x);
  } else if constexpr (M == weft::access_mode::write) {
    return weft::write(x);
  } else if constexpr (M == weft::access_mode::commute) {
    return weft::commute(x);
  } else if constexpr (M == weft::access_mode::concurrent) {
    return weft::concurrent(x);
  } else {
    return weft::reduce(x, std::plus<>{});
  }
}

using emplace_fn = weft::flow_task (*)(weft::flow&, std::uint64_t*,
                                       const std::vector<weft::flow_task>&, const task_spec&,
                                       run_log*);

template <std::size_t S>
weft::flow_task emplace_shaped(weft::flow& f, std::uint64_t* objects,
                               const std::vector<weft::flow_task>& handles, const task_spec& t,
                               run_log* log) {
  auto emplace_declared = [&]<std::size_t... I>(std::index_sequence<I...>) {
    if constexpr (shapes[S].after) {
      return f.emplace(task_body{&t, log},
                       declare<shapes[S].modes[I]>(objects[t.accesses[I].object])...,
                       weft::after(handles[t.after]));
    } else {
      return f.emplace(task_body{&t, log},
                       declare<shapes[S].modes[I]>(objects[t.accesses[I].object])...);
    }
  };
  return emplace_declared(std::make_index_sequence<shapes[S].size>{});
}

template <std::size_t... S>
constexpr std::array<emplace_fn, sizeof...(S)> make_emplacers(std::index_sequence<S...>) {
  return {{&emplace_shaped<S>...}};
}

constexpr std::array<emplace_fn, shape_count> emplacers =
    make_emplacers(std::make_index_sequence<shape_count>{});

std::size_t find_shape(const task_spec& t, bool after) {
  for (std::size_t s = 0; s < shape_count; ++s) {
    const shape& sh = shapes[s];
    if (sh.size != t.count || sh.after != after) continue;
    bool same = true;
    for (std::size_t i = 0; i < t.count; ++i) same = same && sh.modes[i] == t.accesses[i].mode;
    if (same) return s;
  }
  throw std::logic_error("no shape for a task");
}

// n tasks on object_count objects. Each object has a favourite mode that
// changes now and then, so that runs of reads, commutes and so on form.
std::vector<task_spec> make_program(std::mt19937_64& rng, std::size_t n, std::size_t throwers = 0) {
  std::vector<task_spec> tasks(n);
  std::array<weft::access_mode, object_count> favourite{};
  for (auto& m : favourite) m = static_cast<weft::access_mode>(rng() % mode_count);
  for (std::size_t i = 0; i < n; ++i) {
    task_spec& t = tasks[i];
    t.index = i;
    t.salt = rng();
    const bool after = i > 0 && rng() % 8 == 0;
    t.count = after ? rng() % 3 : 1 + rng() % max_accesses;
    std::array<std::size_t, object_count> pick{};
    for (std::size_t o = 0; o < object_count; ++o) pick[o] = o;
    for (std::size_t a = 0; a < t.count; ++a) {
      std::swap(pick[a], pick[a + rng() % (object_count - a)]);
      const std::size_t o = pick[a];
      if (rng() % 8 == 0) favourite[o] = static_cast<weft::access_mode>(rng() % mode_count);
      const auto m =
          rng() % 4 != 0 ? favourite[o] : static_cast<weft::access_mode>(rng() % mode_count);
      t.accesses[a] = access_spec{o, m};
    }
    std::sort(t.accesses.begin(), t.accesses.begin() + static_cast<std::ptrdiff_t>(t.count),
              [](const access_spec& a, const access_spec& b) { return a.mode < b.mode; });
    if (after) t.after = i - 1 - rng() % std::min<std::size_t>(i, 32);
    t.shape = find_shape(t, after);
  }
  for (std::size_t k = 0; k < throwers && n != 0; ++k) tasks[rng() % n].throws = true;
  return tasks;
}

// Runs task t on the model, the sequential reference.
void apply_to_model(const task_spec& t, std::array<std::uint64_t, object_count>& model) {
  std::array<std::uint64_t*, max_accesses> p{};
  for (std::size_t i = 0; i < t.count; ++i) p[i] = &model[t.accesses[i].object];
  apply(t, p.data());
}

// For each task, the earlier tasks it must run after: those it conflicts
// with on an object (not both of one group mode), and its after() task.
std::vector<std::vector<std::size_t>> predecessors(const std::vector<task_spec>& program) {
  std::vector<std::vector<std::size_t>> preds(program.size());
  std::array<std::vector<std::pair<std::size_t, weft::access_mode>>, object_count> history;
  for (const task_spec& t : program) {
    for (std::size_t a = 0; a < t.count; ++a) {
      const access_spec& acc = t.accesses[a];
      for (const auto& [earlier, mode] : history[acc.object]) {
        if (conflict(mode, acc.mode)) preds[t.index].push_back(earlier);
      }
    }
    if (shapes[t.shape].after) preds[t.index].push_back(t.after);
    for (std::size_t a = 0; a < t.count; ++a) {
      history[t.accesses[a].object].emplace_back(t.index, t.accesses[a].mode);
    }
  }
  return preds;
}

TEST_P(flow_stress, random_programs_match_a_sequential_run) {
  weft::pool pool{options()};
  std::mt19937_64 rng(0xF10'0000 + GetParam());
  const std::size_t programs = weft::test::scaled(200, 20);
  constexpr std::array<std::size_t, 5> windows{0, 2, 5, 64, 4096};
  for (std::size_t p = 0; p < programs; ++p) {
    const std::size_t n = p % 16 == 0 ? 2000 : 200 + rng() % 300;
    const std::vector<task_spec> program = make_program(rng, n);
    const weft::flow_options fo{.window = windows[rng() % windows.size()],
                                .keep_graph = rng() % 8 == 0};
    // On a worker the producer runs tasks while it waits for the window or
    // for an object.
    const bool in_job = rng() % 3 == 0;
    alignas(64) std::array<std::uint64_t, object_count> objects{};
    for (auto& x : objects) x = rng();
    std::array<std::uint64_t, object_count> model = objects;
    std::mt19937_64 choices(rng());
    std::string failure;  // the first mismatch, found by whichever thread produces
    auto produce = [&] {
      weft::flow f{pool, fo};
      std::vector<weft::flow_task> handles(n);
      for (std::size_t i = 0; i < n; ++i) {
        const task_spec& t = program[i];
        apply_to_model(t, model);
        handles[i] = emplacers[t.shape](f, objects.data(), handles, t, nullptr);
        if (choices() % 64 == 0) {
          const std::size_t o = choices() % object_count;
          f.wait(objects[o]);
          if (objects[o] != model[o] && failure.empty()) {
            failure = "after wait(x) of object " + std::to_string(o) + " at task " +
                      std::to_string(i) + ": " + std::to_string(objects[o]) + " instead of " +
                      std::to_string(model[o]);
          }
        }
        if (choices() % 512 == 0) {
          f.wait();  // the flow goes on afterwards
          if (objects != model && failure.empty()) {
            failure = "after wait() at task " + std::to_string(i);
          }
        }
      }
      if (fo.keep_graph) {
        std::ostringstream dot;
        f.dump(dot);
      }
      f.wait();
    };
    if (in_job) {
      pool.submit(produce).get();
    } else {
      produce();
    }
    ASSERT_EQ(failure, "") << "program " << p << " (" << n << " tasks, window " << fo.window
                           << (in_job ? ", in a job" : "") << ")";
    ASSERT_EQ(objects, model) << "program " << p << " (" << n << " tasks, window " << fo.window
                              << (in_job ? ", in a job" : "") << ")";
  }
}

TEST_P(flow_stress, exceptions_at_random_tasks) {
  weft::pool pool{options()};
  std::mt19937_64 rng(0xE0'0000 + GetParam());
  const std::size_t programs = weft::test::scaled(60, 6);
  weft::flow f{pool, {.window = 64}};  // reused after every failure
  for (std::size_t p = 0; p < programs; ++p) {
    const std::size_t n = 1 + rng() % 500;
    const std::vector<task_spec> program = make_program(rng, n, 1 + rng() % 3);
    const auto preds = predecessors(program);
    std::array<std::uint64_t, object_count> initial{};
    for (auto& x : initial) x = rng();
    std::array<std::uint64_t, object_count> objects = initial;
    run_log log(n);
    log.throwing = true;
    std::vector<weft::flow_task> handles(n);
    for (std::size_t i = 0; i < n; ++i) {
      handles[i] = emplacers[program[i].shape](f, objects.data(), handles, program[i], &log);
    }
    bool threw = false;
    std::size_t thrown = n;
    try {
      f.wait();
    } catch (const task_failure& e) {
      threw = true;
      thrown = e.index;
    }
    std::vector<bool> failed(n);
    std::vector<bool> tainted(n);  // after a task that failed, or was skipped for it
    bool any_failed = false;
    std::size_t first_thrower = n;
    for (std::size_t i = 0; i < n; ++i) {
      failed[i] = program[i].throws && log.ran[i].load();
      any_failed = any_failed || failed[i];
      if (program[i].throws && first_thrower == n) first_thrower = i;
      for (const std::size_t a : preds[i]) tainted[i] = tainted[i] || failed[a] || tainted[a];
    }
    ASSERT_TRUE(threw) << "program " << p << ": a task threw, wait() did not rethrow";
    ASSERT_TRUE(any_failed);
    ASSERT_LT(thrown, n);
    EXPECT_TRUE(failed[thrown]) << "wait() rethrew the exception of a task that did not throw";
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_FALSE(tainted[i] && log.ran[i].load())
          << "program " << p << ": task " << i << " ran after a task it depends on failed";
    }
    if (GetParam() == 0) {
      // In program order: everything up to the first thrower, nothing after.
      EXPECT_EQ(thrown, first_thrower);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(log.ran[i].load(), i <= first_thrower) << "program " << p << ", task " << i;
      }
    }
    // The same flow runs the program again, completely, without throwing.
    objects = initial;
    std::array<std::uint64_t, object_count> model = initial;
    for (const task_spec& t : program) apply_to_model(t, model);
    run_log quiet(n);
    for (std::size_t i = 0; i < n; ++i) {
      handles[i] = emplacers[program[i].shape](f, objects.data(), handles, program[i], &quiet);
    }
    ASSERT_NO_THROW(f.wait()) << "program " << p;
    ASSERT_EQ(objects, model) << "program " << p;
  }
}

TEST_P(flow_stress, cancel_races_with_execution) {
  weft::pool pool{options()};
  std::mt19937_64 rng(0xCA'0000 + GetParam());
  const std::size_t rounds = weft::test::scaled(200, 20);
  weft::flow f{pool};
  std::size_t cancelled_rounds = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::size_t n = 300;
    const std::vector<task_spec> program = make_program(rng, n);
    const auto preds = predecessors(program);
    std::array<std::uint64_t, object_count> objects{};
    for (auto& x : objects) x = rng();
    std::array<std::uint64_t, object_count> model = objects;
    for (const task_spec& t : program) apply_to_model(t, model);
    run_log log(n);
    const auto delay = std::chrono::microseconds(rng() % 2 == 0 ? 0 : rng() % 300);
    std::atomic<int> cancel_result{-1};
    std::thread canceller([&] {
      std::this_thread::sleep_for(delay);
      cancel_result = f.cancel() ? 1 : 0;
    });
    std::vector<weft::flow_task> handles(n);
    for (std::size_t i = 0; i < n; ++i) {
      handles[i] = emplacers[program[i].shape](f, objects.data(), handles, program[i], &log);
    }
    bool cancelled = false;
    try {
      f.wait();
    } catch (const weft::run_cancelled&) {
      cancelled = true;
      ++cancelled_rounds;
    }
    canceller.join();
    std::size_t ran = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!log.ran[i].load()) continue;
      ++ran;
      for (const std::size_t a : preds[i]) {
        ASSERT_TRUE(log.ran[a].load())
            << "round " << r << ": task " << i << " ran, but not task " << a << " before it";
      }
    }
    // A cancel() that found nothing unfinished has nothing to skip.
    if (cancel_result.load() == 0) {
      EXPECT_EQ(ran, n) << "round " << r
                        << ": tasks were skipped after a cancel() that returned false";
    }
    if (!cancelled) {
      EXPECT_EQ(ran, n) << "round " << r;
      EXPECT_EQ(objects, model) << "round " << r;
    }
    // The flow goes on as usual, whenever the cancel came.
    std::atomic<bool> next_ran{false};
    f.emplace([&next_ran] { next_ran = true; });
    ASSERT_NO_THROW(f.wait()) << "round " << r << ": a cancel() reached the next round";
    ASSERT_TRUE(next_ran.load());
  }
  RecordProperty("cancelled_rounds", static_cast<int>(cancelled_rounds));
}

INSTANTIATE_TEST_SUITE_P(workers, flow_stress, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

// A future of another pool becomes ready while the flow waits: the thread
// that sets it queues the flow's task, and must be done with the flow and
// its pool by the time the task has run, wait() has returned and both are
// destroyed (ThreadSanitizer and AddressSanitizer see it when it is not).
TEST(flow_lifetime, a_future_of_another_pool_ends_the_flow) {
  weft::pool other{{.threads = 1}};
  const std::size_t rounds = weft::test::scaled(1000, 100);
  for (std::size_t r = 0; r < rounds; ++r) {
    auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = 1 + r % 2});
    auto f = std::make_unique<weft::flow>(*pool);
    std::atomic<bool> emplaced{false};
    std::atomic<int> ran{0};
    auto fut = other.submit([&emplaced] {
      while (!emplaced.load()) std::this_thread::yield();
      return 1;
    });
    f->emplace([&ran] { ran.fetch_add(1); }, weft::after(fut));
    emplaced = true;
    f->wait();
    f.reset();
    pool.reset();
    ASSERT_EQ(ran.load(), 1);
    ASSERT_EQ(fut.get(), 1);
  }
}

// ---------------------------------------------------------------------------
// Memory

// Peak resident set size in KiB (VmHWM), or -1.
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Gives the heap's free memory back to the system, then lowers the peak to
// the current RSS (Linux 4.0 and later), so that the tests before this one
// (their peaks, or memory they freed that a leak could reuse unseen) do not
// hide this one's growth.
void reset_peak_rss() {
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool rss_is_meaningful = false;  // freed blocks wait in ASan's quarantine
#else
constexpr bool rss_is_meaningful = true;
#endif

// Runs `produce` and checks that the peak RSS grew by less than
// `limit_kib` meanwhile.
void expect_flat_memory(const std::function<void()>& produce, long limit_kib) {
  reset_peak_rss();
  const long before = peak_rss_kib();
  produce();
  const long after = peak_rss_kib();
  ASSERT_GT(before, 0) << "no VmHWM in /proc/self/status";
  ::testing::Test::RecordProperty("peak_rss_growth_kib", static_cast<int>(after - before));
  if (!rss_is_meaningful) return;
  EXPECT_LT(after - before, limit_kib) << "peak RSS grew by " << (after - before) << " KiB";
}

// 10 million tasks (scaled; at least a million) of every mode but reduce
// on a few objects, through a window of 64: memory stays flat. Most come
// from a producer on a worker (which runs tasks itself when the window is
// full), some from the main thread and some on a sequential pool.
TEST(flow_memory, ten_million_tasks_in_a_small_window) {
  const std::size_t n = weft::test::scaled(10'000'000, 1'000'000);
  weft::pool pool{{.threads = 2}};
  weft::pool sequential{{.threads = 0}};
  constexpr std::size_t k = 16;
  std::array<std::uint64_t, k> objects{};
  std::array<std::uint64_t, k> expected{};
  auto produce = [&objects, &expected](weft::pool& p, std::size_t count) {
    weft::flow f{p, {.window = 64}};
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t o = i % k;
      std::uint64_t& x = objects[o];
      switch ((i / (k * 4)) % 4) {
        case 0:
          f.emplace([](std::uint64_t& v) { v = v * 3 + 1; }, weft::write(x));
          expected[o] = expected[o] * 3 + 1;
          break;
        case 1:
          f.emplace([](const std::uint64_t& v) { (void)v; }, weft::read(x));
          break;
        case 2:
          f.emplace([](std::uint64_t& v) { v += 2; }, weft::commute(x));
          expected[o] += 2;
          break;
        default:
          f.emplace([](std::uint64_t& v) { weft::test::atomic_add(v, 5); }, weft::concurrent(x));
          expected[o] += 5;
          break;
      }
    }
    f.wait();
  };
  expect_flat_memory(
      [&] {
        pool.submit([&] { produce(pool, n - n / 10 - n / 5); }).get();
        produce(pool, n / 10);
        produce(sequential, n / 5);
      },
      64 * 1024);
  EXPECT_EQ(objects, expected);
}

// The tasks of the other tests, on a worker of a two-worker pool through a
// window of 64: n of them must not make memory grow by more than 16 MiB.
void expect_flat_flow(const std::function<void(weft::flow&, std::size_t)>& emplace_one) {
  const std::size_t n = weft::test::scaled(2'000'000, 1'000'000);
  weft::pool pool{{.threads = 2}};
  expect_flat_memory(
      [&] {
        pool.submit([&] {
              weft::flow f{pool, {.window = 64}};
              for (std::size_t i = 0; i < n; ++i) emplace_one(f, i);
              f.wait();
            })
            .get();
      },
      16 * 1024);
}

// Reduce runs closed by reads: each run's reduction must go once folded,
// not stay until wait().
TEST(flow_memory, reductions_do_not_pile_up_until_wait) {
  std::uint64_t x = 0;
  expect_flat_flow([&](weft::flow& f, std::size_t i) {
    if (i % 2 == 0) {
      f.emplace([](std::uint64_t& copy) { copy += 1; }, weft::reduce(x, std::plus<>{}));
    } else {
      f.emplace([](const std::uint64_t& v) { (void)v; }, weft::read(x));
    }
  });
  EXPECT_EQ(x, weft::test::scaled(2'000'000, 1'000'000) / 2);
}

// Commute tasks on more objects than the flow remembers at once: the
// objects it forgets must not leave their locks behind until wait().
TEST(flow_memory, commute_locks_do_not_pile_up_until_wait) {
  std::vector<std::uint64_t> objects(4096, 0);
  expect_flat_flow([&](weft::flow& f, std::size_t i) {
    f.emplace([](std::uint64_t& v) { v += 1; }, weft::commute(objects[i % objects.size()]));
  });
  const std::size_t n = weft::test::scaled(2'000'000, 1'000'000);
  std::uint64_t total = 0;
  for (const std::uint64_t v : objects) total += v;
  EXPECT_EQ(total, n);
}

// Tasks after two futures each: the second future's waiter must not stay
// until wait().
TEST(flow_memory, future_edges_do_not_pile_up_until_wait) {
  weft::pool other{{.threads = 1}};
  auto a = other.submit([] { return 1; });
  auto b = other.submit([] { return 2; });
  a.wait();
  b.wait();
  std::atomic<std::size_t> count{0};
  expect_flat_flow([&](weft::flow& f, std::size_t) {
    f.emplace([&count] { count.fetch_add(1, std::memory_order_relaxed); }, weft::after(a),
              weft::after(b));
  });
  EXPECT_EQ(count.load(), weft::test::scaled(2'000'000, 1'000'000));
  EXPECT_EQ(a.get() + b.get(), 3);
}

}  // namespace
