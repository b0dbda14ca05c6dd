/*
 * verify/sleep.pml: SPIN model of weft's sleep/wake protocol
 * (include/weft/detail/sleep.hpp, src/sleep.cpp, pool::idle(), pool::push()
 * and pool::all_queues_empty() in src/core/dispatch.cpp; argued in docs/sleep.md,
 * whose last section maps every step below to the code).
 *
 * Memory model: Promela interleaves whole statements, so every execution is
 * sequentially consistent. That matches the argument of docs/sleep.md, which
 * relies only on the seq_cst operations (the push's store, the RMWs of
 * prepare() and stop_searching(), new_work()'s load, the re-check's loads).
 * Orderings weaker than seq_cst (the relaxed CASes, the acquire/release pair
 * that publishes a job's contents) are not modelled: here they behave as
 * seq_cst.
 *
 * The state word (21-bit fields sleepers, tokens, searchers in one
 * std::atomic<uint64_t>) is three variables that are only ever read or
 * written together inside one atomic{} step, like the one-word load, CAS and
 * fetch_add of the C++.
 *
 * Bounds (override with spin -DW=.. -DP=.. -DN=..; scripts/spin.sh runs
 * W=2 P=2 N=2, W=3 P=1 N=2, and W=2 P=1 N=3 with -DSPURIOUS; W=3 P=2 N=1
 * also passes but takes 28 million states):
 *   W workers (1..3), P producers (1..2), each pushing N jobs into its own
 *   queue (a lane, or the injector: one queue per producer). The search limit
 *   is max(1, W/2), or W for a worker that took part in a fork-join
 *   (detail::search_limit()); the model lets a worker take either limit at
 *   every try, so it covers any mix. Jobs spawn nothing.
 *
 * Properties:
 *   (a) no lost wake-up: once the producers are done, no state has every
 *       worker waiting on the condition variable while a job is queued or a
 *       token is unconsumed (monitor); and the pool's destructor (proctype
 *       stopper) calls stop() only once every job has run, so a wake-up lost
 *       for good leaves it blocked: an invalid end state;
 *   (a') no job waits for an unrelated one: in no state is a job queued while
 *       no producer is between its push and the end of its new_work(), no
 *       searcher between its take and the end of its stop_searching() check,
 *       every worker is running a job or waiting on the condition variable,
 *       and at least one is waiting (monitor; docs/sleep.md's claim that a
 *       visible job "is always run without waiting for another, unrelated
 *       job");
 *   (b) no deadlock: the only legitimate blocking points are labelled end;
 *   (c) tokens <= sleepers in every state (monitor);
 *   and after stop() every worker leaves and the state word is back to 0.
 *
 * -DGUEST adds a thread that is not a worker and stands in for one
 * (pool::waits::stand_in_scope: a parallel algorithm's outside caller): while it is
 * in, producers wake a sleeper only if sleepers > tokens + guests, and a
 * worker may search only while searchers + guests < its limit; the guest
 * takes jobs or not, as it likes, and on leaving clears its bit (seq_cst)
 * and re-checks the queues, calling new_work() if one has a job. (a') is
 * then asked only while no guest is in or leaving: a job queued meanwhile
 * may wait for a busy worker or the guest, by design; (a) still holds.
 *
 * Variants, each of which SPIN must reject:
 *   -DBUG          the producer loads the state word before making its job
 *                  visible (the Dekker pair is broken): lost wake-up;
 *   -DBUG_NOTIFY   wake_one() notifies without taking the mutex first: the
 *                  notification can fall between a sleeper's token check and
 *                  its cv wait;
 *   -DBUG_SEARCHER stop_searching()'s last searcher does not re-check the
 *                  queues: a job pushed while it searched waits for it (a').
 *   -DBUG_GUEST    the guest leaves without re-checking the queues: a job a
 *                  producer pushed while it was in waits for good.
 * -DSPURIOUS lets the condition variable also wake a waiter spuriously.
 */

#ifndef W
#define W 2
#endif
#ifndef P
#define P 1
#endif
#ifndef N
#define N 2
#endif

#define LIMIT   ((W / 2) > 1 -> (W / 2) : 1)   /* max(1, workers / 2) */
#define TOTAL   (P * N)
#define FREE    255                             /* mutex owner when unlocked */

/* sleep_controller::state_ */
byte searchers = 0;
byte sleepers = 0;
byte tokens = 0;
byte guests = 0;       /* the top bit: a guest stands in (pool::waits::stand_in_scope) */

/* sleep_controller::mutex_, cv_, stopping_ */
byte mtx = FREE;
bool waiting[3];      /* waiting[i]: worker i is blocked in cv_.wait */
bool stopping = false;

/* The queues: q[i] jobs visible in producer i's queue. */
byte q[2];

/* Ghost bookkeeping (not in the C++). */
byte ran = 0;            /* jobs a worker has run */
byte producers_done = 0;
byte exited = 0;         /* workers that returned from worker_main() */
bool busy[4];            /* busy[i]: worker i (3: the guest) holds a job it has not finished */
byte in_push = 0;        /* threads between making work visible (or taking it
                            while searching, or leaving as the guest) and the
                            end of their new_work() */
byte guest_state = 0;    /* 0: not yet in, 1: in, 2: leaving, 3: gone */

#define NWAITING  (waiting[0] + waiting[1] + waiting[2])
#define NBUSY     (busy[0] + busy[1] + busy[2])
#define QUEUED    (q[0] + q[1])

inline lock() {
  atomic { mtx == FREE -> mtx = _pid }
}

inline unlock() {
  assert(mtx == _pid);
  mtx = FREE
}

/* cv_.notify_one(): wakes one waiter if there is one; otherwise it is lost. */
inline notify_one() {
  atomic {
    if
    :: waiting[0] -> waiting[0] = false
    :: waiting[1] -> waiting[1] = false
    :: waiting[2] -> waiting[2] = false
    :: else -> skip
    fi
  }
}

inline notify_all() {
  atomic { waiting[0] = false; waiting[1] = false; waiting[2] = false }
}

/* The CAS loop of wake_one(): each failed CAS only reloads the word, so the
 * loop either stops on a value where the condition is false or increments
 * tokens in a state where it holds; that is one atomic step. */
inline wake_one_cas() {
  atomic {
    if
    :: searchers == 0 && sleepers > tokens + guests -> tokens++; nw_granted = true
    :: else -> skip
    fi
  }
}

inline wake_one_notify() {
  if
  :: nw_granted ->
     nw_granted = false;
#ifndef BUG_NOTIFY
     lock(); unlock();                       /* { std::lock_guard lock{mutex_}; } */
#endif
     notify_one()
  :: else -> skip
  fi
}

/* sleep_controller::new_work(), then wake_one(). */
inline new_work() {
  atomic {                                   /* state_.load(seq_cst) */
    nw_wake = (searchers == 0 && sleepers > tokens + guests)
  }
  if
  :: nw_wake -> nw_wake = false; wake_one_cas(); wake_one_notify()
  :: else -> skip
  fi
}

/* pool::all_queues_empty(): one seq_cst load per queue, one at a time. */
inline all_queues_empty(res) {
  res = (q[0] == 0);
  if
  :: res && P > 1 -> res = (q[1] == 0)
  :: else -> skip
  fi
}

/* pool::find_work(): pops or steals one job if a queue has one (each take is
 * one CAS or one locked pop: atomic). To be used inside atomic{}. */
inline take(got) {
  if
  :: q[0] > 0 -> q[0]--; got = true; busy[me] = true
  :: P > 1 && q[1] > 0 -> q[1]--; got = true; busy[me] = true
  :: else -> got = false
  fi
}

proctype worker(byte me) {
  bool got = false;
  bool searching = false;
  bool last = false;
  bool qempty = false;
  bool token = false;
  bool nw_wake = false;
  bool nw_granted = false;

main_loop:                                   /* pool::worker_main() */
  atomic { take(got) };                      /* find_work(&w) */
  if
  :: got -> goto run_job
  :: else -> skip                            /* flush(w); idle(w) */
  fi;

  /* pool::idle() */
try_start_searching:
  atomic {                                   /* CAS: searchers + 1 unless >= limit */
    if
    :: searchers + guests < LIMIT -> searchers++; searching = true
    :: searchers + guests >= LIMIT && searchers + guests < W ->  /* after a fork-join: limit W */
       searchers++; searching = true
    :: searchers + guests >= LIMIT -> searching = false
    fi
  }
idle_loop:
  if
  :: searching ->
     do
     :: atomic {                             /* !all_queues_empty() while spinning, */
          QUEUED > 0 -> take(got);           /* then find_work() (a take that loses */
          in_push++                          /* the race only spins once more) */
        };
stop_searching:
        atomic { last = (searchers == 1); searchers-- };   /* fetch_sub, seq_cst */
#ifndef BUG_SEARCHER
        if
        :: last ->
           all_queues_empty(qempty);
           if
           :: !qempty -> new_work()
           :: else -> skip
           fi
        :: else -> skip
        fi;
#endif
        atomic { last = false; qempty = false; in_push-- };
        goto run_job
     :: break                                /* idle_spin_time ran out */
     od
  :: else -> skip
  fi;
prepare:
  atomic {                                   /* fetch_add, seq_cst */
    if
    :: searching -> searchers--
    :: else -> skip
    fi;
    sleepers++;
    searching = false
  }
recheck:
  all_queues_empty(qempty);
  if
  :: !qempty ->
cancel:
     atomic {                                /* CAS: sleepers - 1, tokens clamped, searchers + 1 */
       qempty = false;
       sleepers--;
       if
       :: tokens > sleepers -> tokens = sleepers
       :: else -> skip
       fi;
       searchers++;
       searching = true
     }
     goto idle_loop
  :: else -> qempty = false
  fi;

  /* sleep_controller::park() */
  lock();
park_loop:
  atomic {                                   /* CAS: take a token, sleeping -> searching */
    if
    :: tokens > 0 -> tokens--; sleepers--; searchers++; token = true
    :: else -> skip
    fi
  }
  if
  :: token -> token = false; unlock(); searching = true; goto idle_loop
  :: else -> skip
  fi;
  if
  :: stopping ->
     atomic { sleepers-- };                  /* fetch_sub(one_sleeper) */
     unlock();
     goto leave
  :: else -> skip
  fi;
cv_wait:
  atomic { waiting[me] = true; mtx = FREE }  /* cv_.wait(lock): unlocks and waits, atomically */
end_parked:
  if
  :: !waiting[me] -> skip                    /* notified */
#ifdef SPURIOUS
  :: waiting[me] -> waiting[me] = false      /* spurious wake-up */
#endif
  fi;
  lock();                                    /* wait() re-acquires the mutex */
  goto park_loop;

run_job:                                     /* execute(j) */
  atomic { got = false; busy[me] = false; ran++ };
  goto main_loop;

leave:
  exited++
}

proctype producer(byte me) {
  byte n = 0;
  bool nw_wake = false;
  bool nw_granted = false;

  do
  :: n < N ->
#ifdef BUG
     /* The load of the state word comes before the job is visible. */
     atomic { nw_wake = (searchers == 0 && sleepers > tokens) };
     atomic { q[me]++; in_push++ };
     if
     :: nw_wake -> nw_wake = false; wake_one_cas(); wake_one_notify()
     :: else -> skip
     fi;
#else
push:
     atomic { q[me]++; in_push++ };          /* bottom (deque, lane) or size hint (injector): seq_cst store */
     new_work();
#endif
     atomic { n++; in_push-- }
  :: else -> break
  od;
  producers_done++
}

/* A thread standing in for a worker (pool::waits::stand_in_scope): it enters, may
 * take any of the queued jobs while it is in, and leaves. */
proctype guest() {
  bool got = false;
  bool qempty = false;
  bool nw_wake = false;
  bool nw_granted = false;
  byte me = 3;                               /* busy[3]; the workers are 0 to 2 */
  atomic { guests = 1; guest_state = 1 };    /* enter_guest(): fetch_add, seq_cst */
  do
  :: atomic { QUEUED > 0 -> take(got) };     /* a job run in a worker's place */
     atomic { got = false; busy[me] = false; ran++ }
  :: break
  od;
  atomic { guests = 0; guest_state = 2; in_push++ };   /* leave_guest(): fetch_sub, seq_cst */
#ifndef BUG_GUEST
  all_queues_empty(qempty);
  if
  :: !qempty -> new_work()
  :: else -> skip
  fi;
#endif
  atomic { guest_state = 3; in_push-- }
}

/* The pool's destructor: runs once every other thread's calls into the pool
 * have returned (the producers are done), waits until every job has run
 * (quiescent()), then stop(), then joins the workers. */
proctype stopper() {
  (producers_done == P && ran == TOTAL);
#ifdef GUEST
  (guest_state == 3);                        /* the guest's call has returned */
#endif
stop:
  lock();
  stopping = true;
  unlock();
  notify_all();
  (exited == W);                             /* join */
  assert(QUEUED == 0 && searchers == 0 && sleepers == 0 && tokens == 0 && NWAITING == 0)
}

/* Invariants (c), (a) and (a'); blocked for good unless one is violated. */
#ifdef GUEST
#define GUEST_GONE      (guest_state == 3)
#else
#define GUEST_GONE      true
#endif
#define LOST_WAKEUP     (producers_done == P && GUEST_GONE && NWAITING == W && QUEUED > 0)
#define STRANDED_TOKEN  (producers_done == P && GUEST_GONE && NWAITING == W && tokens > 0)
#define JOB_WAITS       (QUEUED > 0 && in_push == 0 && guests == 0 && NWAITING > 0 && \
                         NWAITING + NBUSY == W)

proctype monitor() {
  bool too_many_tokens, lost_wakeup, stranded_token, job_waits;
end_monitor:
  atomic {
    (tokens > sleepers || LOST_WAKEUP || STRANDED_TOKEN || JOB_WAITS) ->
    too_many_tokens = (tokens > sleepers);
    lost_wakeup = LOST_WAKEUP;
    stranded_token = STRANDED_TOKEN;
    job_waits = JOB_WAITS;
    assert(!too_many_tokens);     /* (c) */
    assert(!lost_wakeup);         /* (a) */
    assert(!stranded_token);      /* (a) */
    assert(!job_waits)            /* (a') */
  }
}

init {
  byte i;
  assert(W >= 1 && W <= 3 && P >= 1 && P <= 2);
  atomic {
    run monitor();
    i = 0;
    do
    :: i < W -> run worker(i); i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < P -> run producer(i); i++
    :: else -> break
    od;
    run stopper();
#ifdef GUEST
    run guest();
#endif
    i = 0
  }
}
