// detail::job_cache and a worker's hand-back of jobs it freed for another cache: every job comes
// back once, and the lists the worker links carry the prefetch hints the allocator follows.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <vector>
#include <weft/detail/context.hpp>
#include <weft/detail/job.hpp>

namespace {

using weft::detail::heap_job;
using weft::detail::job_cache;
using weft::detail::worker;

// Empties home's first chunk of jobs, so that what it hands out next comes from the jobs given
// back to it.
std::vector<heap_job*> drain_first_chunk(job_cache& home) {
  std::vector<heap_job*> jobs;
  jobs.push_back(home.allocate());
  const std::size_t chunk = home.capacity();
  while (jobs.size() < chunk) jobs.push_back(home.allocate());
  return jobs;
}

TEST(job_cache, jobs_a_worker_frees_for_another_cache_come_back_each_once) {
  job_cache home;
  worker w{0};
  const std::vector<heap_job*> jobs = drain_first_chunk(home);
  for (heap_job* j : jobs) w.free_remote(j);  // hands them over every remote_batch jobs
  w.flush_remote();
  EXPECT_EQ(home.finished[0].load(), jobs.size());
  std::set<heap_job*> back;
  for (std::size_t i = 0; i < jobs.size(); ++i) back.insert(home.allocate());
  EXPECT_EQ(back, std::set<heap_job*>(jobs.begin(), jobs.end()));
  EXPECT_EQ(home.capacity(), jobs.size()) << "no new chunk while jobs were given back";
}

TEST(job_cache, a_freed_job_names_the_one_the_allocator_takes_remote_ahead_later) {
  // Without the hint each allocation would wait for a cache miss on the link of the job before
  // it (bench/batches); the allocator prefetches the job remote_ahead places down the list.
  job_cache home;
  worker w{0};
  const std::vector<heap_job*> jobs = drain_first_chunk(home);
  const std::size_t n = 20;  // fewer than remote_batch: one list, handed over by the flush
  ASSERT_LT(n, worker::remote_batch);
  ASSERT_LE(n, jobs.size());
  for (std::size_t i = 0; i < n; ++i) w.free_remote(jobs[i]);
  w.flush_remote();
  std::vector<heap_job*> order;
  std::vector<heap_job*> hints;
  for (std::size_t i = 0; i < n; ++i) {
    heap_job* j = home.allocate();
    order.push_back(j);
    hints.push_back(j->ahead());  // the links stay until a callable is stored
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(order[i], jobs[n - 1 - i]) << "newest first";
    heap_job* const expected =
        i + worker::remote_ahead < n ? order[i + worker::remote_ahead] : nullptr;
    EXPECT_EQ(hints[i], expected) << "allocation " << i;
  }
}

}  // namespace
