// weft::mpi under mpirun (tests/mpi/CMakeLists.txt runs this executable on
// 1, 2, 3 and 4 ranks). Every rank runs every test, in the same order.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/mpi.hpp>
#include <weft/weft.hpp>

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// The same on every rank: every rank builds the same program from it.
std::uint64_t shared_seed(std::uint64_t base) {
  std::uint64_t s = base;
  MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return s;
}

TEST(MpiProgress, AfterRequestCompletesWithItsStatus) {
  weft::pool pool{weft::pool_options{.threads = 2}};
  weft::mpi::progress progress{pool};
  const int me = world_rank();
  const int n = world_size();
  const int to = (me + 1) % n;
  const int from = (me + n - 1) % n;
  int out = 100 + me;
  int in = -1;
  MPI_Request recv = MPI_REQUEST_NULL;
  MPI_Request send = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &recv);
  MPI_Isend(&out, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &send);
  weft::future<MPI_Status> r = progress.after(recv);
  weft::future<MPI_Status> s = progress.after(send);
  EXPECT_EQ(recv, MPI_REQUEST_NULL);  // taken
  // A continuation runs once the data is there; nothing blocks meanwhile.
  weft::future<int> seen = std::move(r).then([&](MPI_Status st) {
    EXPECT_EQ(st.MPI_SOURCE, from);
    return in;
  });
  EXPECT_EQ(seen.get(), 100 + from);
  s.get();
  EXPECT_EQ(progress.pending(), 0U);
  EXPECT_GE(progress.statistics().completed, 2U);
}

TEST(MpiProgress, NullRequestIsAUsageError) {
  weft::pool pool{weft::pool_options{.threads = 1}};
  weft::mpi::progress progress{pool};
  MPI_Request r = MPI_REQUEST_NULL;
  EXPECT_THROW((void)progress.after(r), weft::usage_error);
}

TEST(MpiProgress, SequentialPoolIsAUsageError) {
  weft::pool pool{weft::pool_options{.threads = 0}};
  EXPECT_THROW(weft::mpi::progress{pool}, weft::usage_error);
  EXPECT_THROW((weft::mpi::flow{pool, MPI_COMM_WORLD}), weft::usage_error);
}

TEST(MpiProgress, DestroyingCancelsPendingReceives) {
  weft::pool pool{weft::pool_options{.threads = 1}};
  int in = 0;
  weft::future<MPI_Status> f;
  {
    weft::mpi::progress progress{pool};
    MPI_Request r = MPI_REQUEST_NULL;
    // Nobody sends on this tag.
    MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &r);
    f = progress.after(r);
  }
  EXPECT_THROW(f.get(), weft::mpi::error);
}

// While every worker is busy, the poller rests for busy_interval instead of
// polling every max_interval, and a worker that runs out of work ends the
// rest. The only worker is busy for 300 ms, and a message to this rank
// arrives 100 ms into it: the poller (resting up to 20 s) polls at most a
// few times meanwhile, where every max_interval would be over a thousand
// polls, and sees the message soon after the worker is free, not 20 s later.
TEST(MpiProgress, PollsRarelyWhileEveryWorkerIsBusy) {
  using namespace std::chrono_literals;
  using clock = std::chrono::steady_clock;
  weft::pool pool{weft::pool_options{.threads = 1}};
  weft::mpi::progress progress{pool,
                               {.min_interval = 20us, .max_interval = 200us, .busy_interval = 20s}};
  const int me = world_rank();
  int in = -1;
  MPI_Request recv = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, me, 77, MPI_COMM_WORLD, &recv);
  weft::future<MPI_Status> r = progress.after(recv);
  std::atomic<bool> started{false};
  std::uint64_t polls_at_start = 0;
  std::uint64_t polls_at_end = 0;
  clock::time_point freed;
  weft::future<void> busy = pool.submit([&] {
    polls_at_start = progress.statistics().polls;
    started.store(true);
    std::this_thread::sleep_for(300ms);
    polls_at_end = progress.statistics().polls;
    freed = clock::now();
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(100ms);
  int out = 5;
  MPI_Send(&out, 1, MPI_INT, me, 77, MPI_COMM_WORLD);
  busy.get();
  r.get();
  const clock::duration seen_after = clock::now() - freed;
  EXPECT_EQ(in, 5);
  EXPECT_LE(polls_at_end - polls_at_start, 3U)
      << "the poller did not rest while the worker was busy";
  EXPECT_LT(seen_after, 5s) << "the worker that went idle did not end the poller's rest";
}

// Intervals as long as microseconds::max() saturate instead of overflowing
// (issue 41): with the only worker busy the poller rests busy_interval,
// here "until kicked", and the worker that runs out of work kicks it (the
// message came meanwhile); the doubling of the interval stops at
// max_interval. Under UBSan (the asan preset) an overflow aborts the test.
TEST(MpiProgress, IntervalsTooLongToRepresentSaturate) {
  using namespace std::chrono_literals;
  constexpr std::chrono::microseconds longest = std::chrono::microseconds::max();
  weft::pool pool{weft::pool_options{.threads = 1}};
  weft::mpi::progress progress{
      pool, {.min_interval = 20us, .max_interval = longest, .busy_interval = longest}};
  const int me = world_rank();
  int in = -1;
  MPI_Request recv = MPI_REQUEST_NULL;
  MPI_Irecv(&in, 1, MPI_INT, me, 78, MPI_COMM_WORLD, &recv);
  weft::future<MPI_Status> r = progress.after(recv);
  std::atomic<bool> started{false};
  weft::future<void> busy = pool.submit([&] {
    started.store(true);
    std::this_thread::sleep_for(100ms);
  });
  while (!started.load()) std::this_thread::yield();
  // Polls that find nothing meanwhile rest "until kicked".
  std::this_thread::sleep_for(50ms);
  int out = 6;
  MPI_Send(&out, 1, MPI_INT, me, 78, MPI_COMM_WORLD);
  busy.get();
  r.get();
  EXPECT_EQ(in, 6);
}

TEST(MpiProgress, IntervalsOutOfOrderAreAUsageError) {
  using namespace std::chrono_literals;
  weft::pool pool{weft::pool_options{.threads = 1}};
  EXPECT_THROW((weft::mpi::progress{pool, {.min_interval = 0us}}), weft::usage_error);
  EXPECT_THROW((weft::mpi::progress{pool, {.min_interval = 300us}}), weft::usage_error);
  // A busy interval below max_interval is max_interval: not an error.
  EXPECT_NO_THROW((weft::mpi::progress{pool, {.busy_interval = 100us}}));
}

// A random program over objects spread block-cyclically: each task reads a
// few objects and writes one (or only reads, and checks what it sees); the
// writes use every mode of the flow (write, commute, concurrent, reduce). On
// every rank the producer also runs the program sequentially as it emplaces
// it, so each task knows the values it must see; the final values are
// gathered on rank 0 and compared with the sequential run.
struct cell {
  std::array<std::uint64_t, 4> v{};
};

void run_random_program(std::uint64_t seed, int objects, int tasks, std::size_t workers) {
  weft::pool pool{weft::pool_options{.threads = workers}};
  const int n = world_size();
  const int me = world_rank();
  std::vector<cell> data(static_cast<std::size_t>(objects));
  std::vector<cell> reference(static_cast<std::size_t>(objects));
  for (int i = 0; i < objects; ++i) {
    for (std::size_t k = 0; k < 4; ++k) {
      reference[static_cast<std::size_t>(i)].v[k] = static_cast<std::uint64_t>(i) * 10 + k;
    }
    // Non-owners start with garbage: only the owner's instance counts.
    data[static_cast<std::size_t>(i)] =
        (i % n == me) ? reference[static_cast<std::size_t>(i)] : cell{{99, 99, 99, 99}};
  }
  std::atomic<int> wrong{0};
  std::mt19937_64 rng{seed};
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    // Odd objects travel through a view, and a dropped copy of one is
    // poisoned by its release: a task that read it afterwards, or a read
    // that used it instead of receiving anew, would see 99s.
    for (int i = 0; i < objects; ++i) {
      cell& c = data[static_cast<std::size_t>(i)];
      if (i % 2 == 0) {
        f.register_data(c, i % n);
      } else {
        f.register_data(
            c, i % n, sizeof(cell),
            [](cell& x) {
              return std::as_writable_bytes(std::span{&x, 1});
            },
            [](cell& x) {
              x = cell{{99, 99, 99, 99}};
            });
      }
    }
    auto pick = [&] {
      return static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(objects));
    };
    for (int t = 0; t < tasks; ++t) {
      const std::size_t a = pick();
      const std::size_t b = pick();
      const std::size_t w = pick();
      const cell ea = reference[a];
      const cell eb = reference[b];
      const auto id = static_cast<std::uint64_t>(t);
      // The modes whose tasks may run in any order (commute, concurrent,
      // reduce) add, which any order gives the same result; they read an
      // object other than the one they change.
      const std::size_t other = a == w ? (a + 1) % static_cast<std::size_t>(objects) : a;
      const cell eo = reference[other];
      switch (rng() % 8) {
        case 0: {  // reads only: checks the versions it sees
          f.emplace(
              [&wrong, ea, eb](const cell& x, const cell& y) {
                if (x.v != ea.v || y.v != eb.v) wrong.fetch_add(1);
              },
              weft::read(data[a]), weft::read(data[b]));
          break;
        }
        case 1: {  // one read, one write
          f.emplace(
              [&wrong, ea, id](const cell& x, cell& out) {
                if (x.v != ea.v) wrong.fetch_add(1);
                for (std::size_t k = 0; k < 4; ++k) out.v[k] = out.v[k] * 3 + x.v[k] + id;
              },
              weft::read(data[a]), weft::write(data[w]));
          for (std::size_t k = 0; k < 4; ++k) {
            reference[w].v[k] = reference[w].v[k] * 3 + ea.v[k] + id;
          }
          break;
        }
        case 2: {  // write only
          f.emplace(
              [id](cell& out) {
                for (auto& x : out.v) x = x * 7 + id;
              },
              weft::write(data[w]));
          for (auto& x : reference[w].v) x = x * 7 + id;
          break;
        }
        case 3: {  // gather mid-program: the cache must stay right afterwards
          f.gather(data[a], static_cast<int>(id % static_cast<std::uint64_t>(n)));
          break;
        }
        case 5: {  // commute: one at a time, in any order
          f.emplace(
              [&wrong, eo, id](const cell& x, cell& out) {
                if (x.v != eo.v) wrong.fetch_add(1);
                for (std::size_t k = 0; k < 4; ++k) out.v[k] += x.v[k] + id;
              },
              weft::read(data[other]), weft::commute(data[w]));
          for (std::size_t k = 0; k < 4; ++k) reference[w].v[k] += eo.v[k] + id;
          break;
        }
        case 6: {  // concurrent: at the same time, synchronising themselves
          f.emplace(
              [&wrong, eo, id](const cell& x, cell& out) {
                if (x.v != eo.v) wrong.fetch_add(1);
                for (std::size_t k = 0; k < 4; ++k) {
                  std::atomic_ref<std::uint64_t>{out.v[k]}.fetch_add(x.v[k] ^ id);
                }
              },
              weft::read(data[other]), weft::concurrent(data[w]));
          for (std::size_t k = 0; k < 4; ++k) reference[w].v[k] += eo.v[k] ^ id;
          break;
        }
        case 7: {  // reduce: private copies folded into the owner's instance
          f.emplace(
              [&wrong, eo, id](const cell& x, cell& sum) {
                if (x.v != eo.v) wrong.fetch_add(1);
                for (std::size_t k = 0; k < 4; ++k) sum.v[k] += x.v[k] * 5 + id;
              },
              weft::read(data[other]), weft::reduce(data[w], [](cell l, const cell& r) {
                for (std::size_t k = 0; k < 4; ++k) l.v[k] += r.v[k];
                return l;
              }));
          for (std::size_t k = 0; k < 4; ++k) reference[w].v[k] += eo.v[k] * 5 + id;
          break;
        }
        default: {  // two reads, one write
          f.emplace(
              [&wrong, ea, eb](const cell& x, const cell& y, cell& out) {
                if (x.v != ea.v || y.v != eb.v) wrong.fetch_add(1);
                for (std::size_t k = 0; k < 4; ++k) out.v[k] += x.v[k] ^ (y.v[k] << 1);
              },
              weft::read(data[a]), weft::read(data[b]), weft::write(data[w]));
          for (std::size_t k = 0; k < 4; ++k) reference[w].v[k] += ea.v[k] ^ (eb.v[k] << 1);
          break;
        }
      }
      // Now and then every rank drops its copies of an object: the next
      // read elsewhere must receive the current version anew.
      if (rng() % 16 == 0) f.drop_copies(data[pick()]);
      if (t == tasks / 2) f.wait();  // two phases
    }
    for (auto& x : data) f.gather(x, 0);
    f.wait();
  }
  EXPECT_EQ(wrong.load(), 0) << "tasks saw a stale or garbled version (seed " << seed << ")";
  if (me == 0) {
    for (int i = 0; i < objects; ++i) {
      EXPECT_EQ(data[static_cast<std::size_t>(i)].v, reference[static_cast<std::size_t>(i)].v)
          << "object " << i << " (seed " << seed << ")";
    }
  }
}

TEST(MpiFlow, RandomProgramsEqualTheSequentialRun) {
  for (std::uint64_t round = 0; round < 30; ++round) {
    const std::uint64_t seed = shared_seed(
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) +
        round);
    run_random_program(seed, 3 + static_cast<int>(round % 9), 300, 1 + round % 3);
  }
}

TEST(MpiFlow, AVersionIsReceivedOncePerRank) {
  weft::pool pool{weft::pool_options{.threads = 2}};
  const int n = world_size();
  const int me = world_rank();
  cell source{{1, 2, 3, 4}};
  std::vector<cell> sinks(static_cast<std::size_t>(n));
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  f.register_data(source, 0);
  for (int r = 0; r < n; ++r) f.register_data(sinks[static_cast<std::size_t>(r)], r);
  // Every rank's sink reads the source three times: one message per rank.
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < n; ++r) {
      f.emplace([](const cell& s, cell& out) { out.v[0] += s.v[0]; }, weft::read(source),
                weft::write(sinks[static_cast<std::size_t>(r)]));
    }
  }
  f.wait();
  EXPECT_EQ(sinks[static_cast<std::size_t>(me)].v[0], 3U);
  const weft::mpi::flow_stats st = f.statistics();
  if (me == 0) {
    EXPECT_EQ(st.messages_sent, static_cast<std::uint64_t>(n - 1));
    EXPECT_EQ(st.bytes_sent, static_cast<std::uint64_t>(n - 1) * sizeof(cell));
  } else {
    EXPECT_EQ(st.messages_received, 1U);
  }
  // A new version is sent again.
  f.emplace([](cell& s) { s.v[0] = 10; }, weft::write(source));
  for (int r = 0; r < n; ++r) {
    f.emplace([](const cell& s, cell& out) { out.v[0] += s.v[0]; }, weft::read(source),
              weft::write(sinks[static_cast<std::size_t>(r)]));
  }
  f.wait();
  EXPECT_EQ(sinks[static_cast<std::size_t>(me)].v[0], 13U);
  if (me != 0) {
    EXPECT_EQ(f.statistics().messages_received, 2U);
  }
}

// An object whose data live elsewhere travels through its (pointer, size)
// view; tasks still declare the object itself.
TEST(MpiFlow, ViewsCarryTheirData) {
  const int n = world_size();
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 2}};
  struct block {
    std::vector<int> values = std::vector<int>(1000, 0);
  };
  std::vector<block> blocks(static_cast<std::size_t>(n));
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  for (int r = 0; r < n; ++r) {
    block& b = blocks[static_cast<std::size_t>(r)];
    f.register_data(b, r, b.values.data(), b.values.size() * sizeof(int));
  }
  // Each rank fills its block, then adds its left neighbour's.
  for (int r = 0; r < n; ++r) {
    f.emplace(
        [r](block& b) {
          for (std::size_t i = 0; i < b.values.size(); ++i)
            b.values[i] = r * 1000 + static_cast<int>(i);
        },
        weft::write(blocks[static_cast<std::size_t>(r)]));
  }
  std::vector<block> sums(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    block& s = sums[static_cast<std::size_t>(r)];
    f.register_data(s, r, s.values.data(), s.values.size() * sizeof(int));
    const int left = (r + n - 1) % n;
    f.emplace(
        [](const block& mine, const block& other, block& out) {
          for (std::size_t i = 0; i < out.values.size(); ++i)
            out.values[i] = mine.values[i] + other.values[i];
        },
        weft::read(blocks[static_cast<std::size_t>(r)]),
        weft::read(blocks[static_cast<std::size_t>(left)]), weft::write(s));
  }
  f.wait();
  const int left = (me + n - 1) % n;
  const block& s = sums[static_cast<std::size_t>(me)];
  for (std::size_t i = 0; i < s.values.size(); i += 97) {
    EXPECT_EQ(s.values[i], me * 1000 + left * 1000 + 2 * static_cast<int>(i)) << i;
  }
}

// An object registered with a view: its data are allocated on the owner
// at once, elsewhere only when the view is asked, which the flow does on
// the rank's first transfer of the object.
struct lazy_block {
  static constexpr std::size_t count = 512;
  std::unique_ptr<std::uint64_t[]> values;
  int views = 0;                      // how often the flow asked this rank for the data
  std::vector<int> reads_at_release;  // with a release: the readers finished at each release
  std::span<std::byte> bytes() {
    ++views;
    if (!values) values = std::make_unique<std::uint64_t[]>(count);
    return std::as_writable_bytes(std::span{values.get(), count});
  }
};

TEST(MpiFlow, LazyViewsAreAskedOnlyWhereTheDataTravel) {
  const int n = world_size();
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 2}};
  const int objects = 3 * n;
  std::vector<lazy_block> x(static_cast<std::size_t>(objects));
  std::vector<cell> sink(static_cast<std::size_t>(n));
  auto reader_of = [n](int i) { return (i + 1) % n; };
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    for (int i = 0; i < objects; ++i) {
      lazy_block& b = x[static_cast<std::size_t>(i)];
      if (i % n == me) b.values = std::make_unique<std::uint64_t[]>(lazy_block::count);
      f.register_data(b, i % n, lazy_block::count * sizeof(std::uint64_t),
                      [](lazy_block& l) { return l.bytes(); });
    }
    for (int r = 0; r < n; ++r) f.register_data(sink[static_cast<std::size_t>(r)], r);
    // Each object is written twice by its owner and read after each write
    // by one rank, twice: two versions travel to that rank, once each.
    for (int round = 1; round <= 2; ++round) {
      for (int i = 0; i < objects; ++i) {
        lazy_block& b = x[static_cast<std::size_t>(i)];
        f.emplace(
            [i, round](lazy_block& l) {
              for (std::size_t k = 0; k < lazy_block::count; ++k) {
                l.values[k] = static_cast<std::uint64_t>(i * round) + k;
              }
            },
            weft::write(b));
        for (int twice = 0; twice < 2; ++twice) {
          f.emplace(
              [](const lazy_block& l, cell& out) {
                for (std::size_t k = 0; k < lazy_block::count; ++k) out.v[0] += l.values[k];
              },
              weft::read(b), weft::write(sink[static_cast<std::size_t>(reader_of(i))]));
        }
      }
    }
    f.wait();
  }
  std::uint64_t expected = 0;
  for (int i = 0; i < objects; ++i) {
    const lazy_block& b = x[static_cast<std::size_t>(i)];
    const bool owner = i % n == me;
    const bool reader = reader_of(i) == me;
    // The owner is asked once when it first sends (not at all on 1 rank);
    // the reader once, before the first version lands; nobody else ever.
    const int views = n == 1 ? 0 : (owner || reader ? 1 : 0);
    EXPECT_EQ(b.views, views) << "object " << i;
    if (!owner && !reader) {
      EXPECT_EQ(b.values, nullptr) << "object " << i << " was allocated";
    }
    if (!reader) continue;
    for (int round = 1; round <= 2; ++round) {
      for (std::size_t k = 0; k < lazy_block::count; ++k) {
        expected += 2 * (static_cast<std::uint64_t>(i * round) + k);
      }
    }
  }
  EXPECT_EQ(sink[static_cast<std::size_t>(me)].v[0], expected);
}

// A copy with a release: drop_copies frees it only after the tasks that
// read it on that rank (each sleeps, so a release that came early would
// find them unfinished), and the next read there receives the object anew,
// asking the view again. The owner's instance is never released.
TEST(MpiFlow, DroppedCopiesAreReleasedAfterTheirReadersAndReceivedAgain) {
  const int n = world_size();
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 2}};
  lazy_block x;
  if (me == 0) x.values = std::make_unique<std::uint64_t[]>(lazy_block::count);
  std::vector<cell> sink(static_cast<std::size_t>(n));
  std::atomic<int> reads{0};
  std::uint64_t messages = 0;
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    f.register_data(
        x, 0, lazy_block::count * sizeof(std::uint64_t), [](lazy_block& b) { return b.bytes(); },
        [&reads](lazy_block& b) {
          b.reads_at_release.push_back(reads.load());
          b.values.reset();
        });
    for (int r = 0; r < n; ++r) f.register_data(sink[static_cast<std::size_t>(r)], r);
    f.emplace(
        [](lazy_block& b) {
          for (std::size_t k = 0; k < lazy_block::count; ++k) b.values[k] = k + 1;
        },
        weft::write(x));
    // Three readers per rank, then a drop, twice; each reader runs on its
    // rank (it writes that rank's sink).
    for (int round = 0; round < 2; ++round) {
      for (int twice = 0; twice < 3; ++twice) {
        for (int r = 0; r < n; ++r) {
          f.emplace(
              [&reads](const lazy_block& b, cell& out) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                for (std::size_t k = 0; k < lazy_block::count; ++k) out.v[0] += b.values[k];
                reads.fetch_add(1);
              },
              weft::read(x), weft::write(sink[static_cast<std::size_t>(r)]));
        }
      }
      f.drop_copies(x);
    }
    f.wait();
    messages = f.statistics().messages_received;
  }
  const std::uint64_t sum = lazy_block::count * (lazy_block::count + 1) / 2;
  EXPECT_EQ(sink[static_cast<std::size_t>(me)].v[0], 6 * sum) << "rank " << me;
  if (me == 0) {
    EXPECT_EQ(x.views, n == 1 ? 0 : 1) << "the owner's view is asked at its first send only";
    EXPECT_TRUE(x.reads_at_release.empty()) << "the owner's instance was released";
    EXPECT_NE(x.values, nullptr);
  } else {
    EXPECT_EQ(messages, 2U) << "the dropped copy was not received anew";
    EXPECT_EQ(x.views, 2);
    EXPECT_EQ(x.reads_at_release, (std::vector<int>{3, 6}))
        << "a copy was released before its readers finished";
    EXPECT_EQ(x.values, nullptr) << "the last copy was not released";
  }
}

// A receiving rank asks the view (and so allocates) only once the data are
// there to receive, not when the receive could be posted: rank 0 reads an
// object that rank 1 writes 300 ms into the flow, and its view is asked
// after rank 1's writer returned (both clocks are the machine's monotonic
// clock).
TEST(MpiFlow, ALazyCopyIsAllocatedWhenItsDataArrive) {
  const int n = world_size();
  if (n < 2) GTEST_SKIP() << "needs a rank that receives";
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 1}};
  lazy_block x;
  if (me == 1) x.values = std::make_unique<std::uint64_t[]>(lazy_block::count);
  cell out{};
  std::int64_t viewed_at = 0;
  std::int64_t written_at = 0;
  auto now = [] { return std::chrono::steady_clock::now().time_since_epoch().count(); };
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    f.register_data(x, 1, lazy_block::count * sizeof(std::uint64_t), [&](lazy_block& l) {
      if (viewed_at == 0) viewed_at = now();
      return l.bytes();
    });
    f.register_data(out, 0);
    f.emplace(
        [&](lazy_block& l) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          for (std::size_t k = 0; k < lazy_block::count; ++k) l.values[k] = 3;
          written_at = now();
        },
        weft::write(x));
    f.emplace(
        [](const lazy_block& l, cell& o) {
          for (std::size_t k = 0; k < lazy_block::count; ++k) o.v[0] += l.values[k];
        },
        weft::read(x), weft::write(out));
    f.wait();
  }
  static_assert(sizeof(std::int64_t) == sizeof(long long));
  MPI_Bcast(&written_at, 1, MPI_LONG_LONG, 1, MPI_COMM_WORLD);
  if (me == 0) {
    EXPECT_EQ(out.v[0], 3 * lazy_block::count);
    EXPECT_EQ(x.views, 1);
    EXPECT_GT(viewed_at, written_at) << "the copy was allocated before its data were sent";
  }
}

TEST(MpiFlow, AViewOfTheWrongSizeAbortsTheFlowOnEveryRank) {
  const int n = world_size();
  if (n < 2) GTEST_SKIP() << "needs a rank that receives";
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 2}};
  cell c{};
  cell out{};
  bool threw_here = false;
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    // Rank 1's view shows one byte too few.
    f.register_data(c, 0, sizeof(cell), [&](cell& x) {
      return std::as_writable_bytes(std::span{&x, 1})
          .first(me == 1 ? sizeof(cell) - 1 : sizeof(cell));
    });
    f.register_data(out, 1);
    f.emplace([](cell& x) { x.v[0] = 5; }, weft::write(c));
    f.emplace([](const cell& x, cell& o) { o.v[0] = x.v[0]; }, weft::read(c), weft::write(out));
    try {
      f.wait();
    } catch (const weft::usage_error& e) {
      threw_here = true;
      EXPECT_EQ(me, 1);
      EXPECT_NE(std::string{e.what()}.find("declared"), std::string::npos) << e.what();
    } catch (const weft::mpi::remote_error& e) {
      threw_here = true;
      EXPECT_NE(me, 1);
    }
  }
  EXPECT_TRUE(threw_here);
}

// A rank waiting for data keeps its one worker for other work: while rank
// 1 holds back the object rank 0 needs, rank 0's pool runs 200 unrelated
// jobs, all before the task that needs the data starts.
TEST(MpiFlow, AWorkerNeverWaitsForAMessage) {
  const int n = world_size();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 1}};
  cell held{};
  cell target{};
  std::atomic<std::int64_t> reader_started{0};
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    f.register_data(held, 1);
    f.register_data(target, 0);
    f.emplace(
        [](cell& h) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          h.v[0] = 5;
        },
        weft::write(held));
    f.emplace(
        [&](const cell& h, cell& t) {
          reader_started.store(std::chrono::steady_clock::now().time_since_epoch().count());
          t.v[0] = h.v[0];
        },
        weft::read(held), weft::write(target));
    if (me == 0) {
      std::vector<weft::future<std::int64_t>> jobs;
      for (int i = 0; i < 200; ++i) {
        jobs.push_back(pool.submit(
            [] { return std::chrono::steady_clock::now().time_since_epoch().count(); }));
      }
      std::int64_t last = 0;
      for (auto& j : jobs) last = std::max(last, j.get());
      f.wait();
      EXPECT_EQ(target.v[0], 5U);
      EXPECT_LT(last, reader_started.load()) << "the unrelated jobs waited for the message";
    } else {
      f.wait();
    }
  }
}

// An exception on rank 1 reaches wait() on every rank: rank 1 rethrows it,
// the others throw remote_error naming rank 1; tasks waiting for data that
// will never be sent do not hang.
TEST(MpiFlow, AnExceptionOnOneRankReachesEveryRank) {
  const int n = world_size();
  const int me = world_rank();
  const int thrower = n > 1 ? 1 : 0;
  weft::pool pool{weft::pool_options{.threads = 2}};
  std::vector<cell> ring(static_cast<std::size_t>(n));
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    for (int r = 0; r < n; ++r) f.register_data(ring[static_cast<std::size_t>(r)], r);
    // A chain around the ranks, 40 steps: every step needs the last one's
    // object, so everything after the throw waits for data that never comes.
    for (int step = 0; step < 40; ++step) {
      const int at = step % n;
      const int before = (at + n - 1) % n;
      const bool throws = step == 9 || (n == 1 && step == 3);
      f.emplace(
          [throws](const cell& in, cell& out) {
            if (throws) throw std::runtime_error("boom");
            out.v[0] = in.v[0] + 1;
          },
          weft::read(ring[static_cast<std::size_t>(before)]),
          weft::write(ring[static_cast<std::size_t>(at)]));
    }
    bool threw_here = false;
    try {
      f.wait();
    } catch (const weft::mpi::remote_error& e) {
      threw_here = true;
      EXPECT_NE(me, 9 % n);
      EXPECT_TRUE(e.rank() == 9 % n || e.rank() == -1) << e.rank();
    } catch (const std::runtime_error& e) {
      threw_here = true;
      EXPECT_EQ(me, 9 % n);
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_TRUE(threw_here);
    // The flow is dead now: a clear error, not a hang.
    EXPECT_THROW(f.emplace([](cell&) {}, weft::write(ring[static_cast<std::size_t>(me)])),
                 weft::usage_error);
  }
  (void)thrower;
  // A new flow over the same communicator works.
  weft::mpi::flow g{pool, MPI_COMM_WORLD};
  cell c{};
  g.register_data(c, 0);
  for (int r = 0; r < n; ++r) {
    g.emplace([](cell& x) { x.v[0] += 1; }, weft::write(c));
  }
  g.gather(c, n - 1);
  g.wait();
  if (me == n - 1) {
    EXPECT_EQ(c.v[0], static_cast<std::uint64_t>(n));
  }
}

TEST(MpiFlow, DifferentProgramsAreDetectedAtWait) {
  const int n = world_size();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const int me = world_rank();
  weft::pool pool{weft::pool_options{.threads = 1}};
  std::vector<cell> own(static_cast<std::size_t>(n));
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  for (int r = 0; r < n; ++r) f.register_data(own[static_cast<std::size_t>(r)], r);
  // Local tasks only (no transfer to hang on), but rank 0 has one more.
  f.emplace([](cell& c) { c.v[0] = 1; }, weft::write(own[static_cast<std::size_t>(me)]));
  if (me == 0) f.emplace([](cell& c) { c.v[0] = 2; }, weft::write(own[0]));
  EXPECT_THROW(f.wait(), weft::usage_error);
}

TEST(MpiFlow, BadDeclarationsAreUsageErrors) {
  const int n = world_size();
  weft::pool pool{weft::pool_options{.threads = 1}};
  cell a{};
  cell b{};
  cell stranger{};
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  EXPECT_THROW(f.register_data(a, n), weft::usage_error);
  EXPECT_THROW(f.register_data(a, -1), weft::usage_error);
  f.register_data(a, 0);
  EXPECT_THROW(f.register_data(a, 0), weft::usage_error);
  f.register_data(b, n - 1);
  EXPECT_EQ(f.owner_of(&b), n - 1);
  EXPECT_THROW(f.emplace([](cell&) {}, weft::write(stranger)), weft::usage_error);
  EXPECT_THROW(f.drop_copies(stranger), weft::usage_error);
  if (n > 1) {
    EXPECT_THROW(f.emplace([](cell&, cell&) {}, weft::write(a), weft::write(b)), weft::usage_error);
  }
  f.wait();
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints the per-test lines; every rank's failures still
  // print, and fail the run.
  if (world_rank() != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  int any = failed;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
