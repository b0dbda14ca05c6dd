/*
 * verify/idle.pml: SPIN model of how weft decides that a pool is idle, and
 * of pool.wait() waiting only for what was submitted before it began
 * (pool::counting's quiescent(), total(), count_spawn(), count_shared(),
 * spawn_epoch(), retire(), flush() in include/weft/detail/core/counting.hpp
 * and src/core/counting.cpp; accounting::drain() in
 * include/weft/detail/core/accounting.hpp; wait() in src/core/wait.cpp;
 * worker::free_remote()/flush_remote() in
 * include/weft/detail/context.hpp; argued in docs/waiting.md, whose last
 * section maps every step below to the code). Three forms of wait():
 *
 *   default      one pair of counts per job cache; wait() is the double
 *                collect over all of them, retried until it reports idle
 *                (the code before epochs; the destructor still does this);
 *   -DEPOCH      the epoch design as it was specified: jobs carry an epoch
 *                parity, each cache has one pair of counts per parity, an
 *                outside submitter reads `epoch` and counts in parity
 *                `epoch & 1`, a spawned job inherits its parent's parity,
 *                and wait(), with e the epoch it read, (1) waits until
 *                parity (e+1)&1 is balanced, (2) flips epoch from e to e+1
 *                if it is still e (under a mutex among waiters), (3) waits
 *                until parity e&1 is balanced;
 *   -DEPOCH -DDRAIN  the epoch design as src/core/wait.cpp implements it: wait()
 *                reads target = epoch, then for e = drained_epoch + 1 up to
 *                target: flips e to e+1 if the epoch is still e, waits until
 *                parity e&1 is balanced, records drained_epoch = e (the
 *                epoch starts at 1). SPIN finds that it can return before a
 *                job submitted before it began (a submitter that read the
 *                epoch before a flip counts after the drain: docs/waiting.md).
 *                -DDRAIN_FIX: before a flip from x to x+1, drain parity
 *                (x+1)&1 once more (step (1) above), and end a wait for
 *                parity x&1 once the epoch reaches x+2: still wrong with two
 *                waiters doing two waits each.
 *                -DRECHECK: the submitter re-reads the epoch after counting;
 *                if it moved, it counts the job in the new epoch's parity,
 *                counts it finished in the old one, and looks again; a wait
 *                for parity x&1 also ends once drained_epoch >= x. Checked
 *                correct within the bounds of scripts/spin.sh.
 *
 * Memory model: Promela interleaves whole statements, so every execution is
 * sequentially consistent; docs/waiting.md argues with the seq_cst counting
 * writes, epoch loads and stores, and the collect's seq_cst loads. A worker's
 * own spawned count is a relaxed store in the C++, made visible by the job's
 * later seq_cst finish count: that step of the argument (and every ordering
 * weaker than seq_cst) is not checked here.
 *
 * What is modelled:
 *   Caches 0..W-1 belong to the workers, cache W is the pool's shared one
 *   (outside threads without a lane; a lane's cache behaves the same);
 *   spawned[] and finished[] hold one count per cache and parity (parity 0
 *   only in the default form). A collect reads the shared cache first, then
 *   the workers' caches in order, one load at a time, as total() does.
 *   A job has a home cache, a parity, a depth (a job of depth d > 0 spawns
 *   one child of depth d-1, counted against the running worker's cache in
 *   the running job's parity, before the parent finishes) and a ghost tag.
 *   Queued jobs are in one pool that any worker takes from (deques, stealing
 *   and lanes are abstracted away); counting a spawn and pushing the job are
 *   one step (nothing but the counts can observe the gap between them). An
 *   outside submitter reads the epoch in one step and counts in the next,
 *   as spawn_epoch() and the fetch_add after it do.
 *   A worker that finishes a job of its own cache only notes it (own[p], as
 *   worker::finished[p]); a job of another cache goes into its remote batch,
 *   which is handed over first when a job of a different home or parity
 *   arrives. pool::counting::flush() hands over both, remote batch first, when the
 *   worker runs out of work (-DANYFLUSH: between any two jobs, as a full
 *   batch, flush_now_and_then() or a future's immediate count may).
 *   A waiter whose collect fails blocks until a finished count grows: the
 *   waiters_ / cv_ hand-off of idle_waiters::block_until() and
 *   idle_waiters::wake() (and its 1 ms re-check) is abstracted to one flag per
 *   waiter that every finished-count increment sets in the same step.
 *
 * Bounds (override with spin -D..; scripts/spin.sh lists what it runs):
 *   W=2 workers; each waiter submits R=1 root of depth RD=1 (root + child)
 *   before each of its waits; a feeder (another outside thread) submits F=1
 *   job of depth FD=1; NJ=3 job slots. One waiter doing WAITS=2 waits in a
 *   row (so a parity is reused), or -DWAITERS=2 waiters doing WAITS=1 wait
 *   each, at the same time.
 *
 * Properties:
 *   (p1) when a wait() returns, every job counted before that wait() began,
 *        and every descendant of one, has finished (ghost: a job's tag is the
 *        number of wait() calls begun when its root was counted, or with
 *        -DRECHECK when its submission completed; the waiter asserts that no
 *        job with a tag up to its own start is alive);
 *   (p2) finished[x] <= spawned[x] for every cache and parity (monitor);
 *   (p3) no deadlock: only idle workers may block for good (label end);
 *   (p4) -DSTEADY: a feeder that keeps submitting cannot hold up a wait. A
 *        feeder job that no wait in progress has to wait for (it read the
 *        epoch after every wait in progress had read its own e or target and
 *        the epoch was past it; in the default form: it was counted while a
 *        wait was in progress) is held back, never runs, until no wait is in
 *        progress or another wait begins: for the counts that is a feeder
 *        that always has a job in flight. Meanwhile the feeder's stream keeps
 *        the workers busy: no worker runs out of work, and a worker may run a
 *        job of the stream (home: the shared cache; parity: the held job's)
 *        whenever that makes it hand counts over (free_remote();
 *        -DPARITY_FLUSH: a worker hands over all it holds when it retires a
 *        job of the other parity; -DREQ_FLUSH: it hands them over while a
 *        wait is in progress, as flush_now_and_then() does). A wait that
 *        depends on a held job never returns: an invalid end state, and with
 *        -DLIVE a violation of the LTL property <> (all waits done) under
 *        weak fairness. -DREACH asserts that no wait returns while a job is
 *        held, to show that waits do return past the feeder.
 *
 * Variants that SPIN must reject: -DBUG (the collect reads spawned once,
 * then finished, with no second spawned sum: a wait returns while a job of
 * its own is alive); the default form with -DSTEADY (the wait never
 * returns: why the epochs were added); see scripts/spin.sh for the rest.
 */

#ifndef W
#define W 2
#endif
#ifndef WAITERS
#define WAITERS 1
#endif
#ifndef WAITS
#if WAITERS == 1
#define WAITS 2
#else
#define WAITS 1
#endif
#endif
#ifndef R
#define R 1
#endif
#ifndef RD
#define RD 1
#endif
#ifndef F
#define F 1
#endif
#ifndef FD
#define FD 1
#endif
#ifndef NJ
#define NJ 3                 /* job slots (queued or held jobs at once) */
#endif

#define NC      (W + 1)      /* caches: one per worker, then the shared one */
#define SHARED  W
#define NTAGS   (WAITERS * WAITS + 1)
#define IX(c, p) ((c) * 2 + (p))

#define FREE    0
#define QUEUED  1
#define HELD    2
#define NONE    255

byte spawned[6];             /* [IX(cache, parity)], room for W <= 2 */
byte finished[6];
#ifdef DRAIN
byte epoch = 1;              /* epoch_ starts at 1 */
byte drained = 0;            /* drained_epoch_ */
#else
byte epoch = 0;
#endif
byte wmtx = NONE;            /* the waiters' mutex */

/* Queued and held jobs. A running job lives in its worker's locals. */
byte jst[NJ];
byte jhome[NJ];
byte jpar[NJ];
byte jdep[NJ];
byte jtag[NJ];
byte nq = 0;                 /* queued (takeable) jobs */
byte nheld = 0;              /* held jobs (-DSTEADY) */
byte nheldp[2];              /* held jobs per parity */

/* Ghost bookkeeping (not in the C++). */
byte wstart = 0;             /* wait() calls begun so far */
byte live[NTAGS];            /* live[t]: jobs counted and not finished, tagged t */
bool dirty[2];               /* dirty[w]: a finished count grew since waiter w's collect began */
bool inprog[2];              /* inprog[w]: waiter w is inside wait() */
byte ein[2];                 /* the epoch waiter w read, NONE before it read it */
byte ninprog = 0;
byte waits_done = 0;
byte feeder_left = F;
byte hold_gen = 0;           /* bumped whenever held jobs are released */

#if defined(RECHECK)
#define DRAIN_ESCAPE (drained >= x)    /* another waiter saw epoch x drained */
#elif defined(DRAIN_FIX)
#define DRAIN_ESCAPE (epoch >= x + 2)  /* parity x&1 was drained again and reused */
#else
#define DRAIN_ESCAPE false
#endif

/* When a worker runs out of work. A steady feeder (-DSTEADY) keeps the
 * workers busy: while it has a job held back, no worker runs out of work. */
#ifdef STEADY
#define OUT_OF_WORK (nq == 0 && nheld == 0)
#else
#define OUT_OF_WORK (nq == 0)
#endif
#ifdef ANYFLUSH
#define FLUSH_NOW true       /* between any two jobs */
#else
#define FLUSH_NOW OUT_OF_WORK
#endif

#define MARK_DIRTY  dirty[0] = true; dirty[1] = true

/* Lowest free slot; inside atomic{}. */
inline alloc(s) {
  s = 0;
  do
  :: s < NJ && jst[s] != FREE -> s++
  :: s < NJ && jst[s] == FREE -> break
  :: s == NJ -> assert(false)               /* raise NJ */
  od
}

inline put(home, par, dep, tag, held) {
  alloc(slot);
  jhome[slot] = home; jpar[slot] = par; jdep[slot] = dep; jtag[slot] = tag;
  if
  :: held -> jst[slot] = HELD; nheld++; nheldp[par]++
  :: else -> jst[slot] = QUEUED; nq++
  fi;
  slot = 0
}

inline release_held() {
  slot = 0;
  do
  :: slot < NJ && jst[slot] == HELD -> jst[slot] = QUEUED; nq++; slot++
  :: slot < NJ && jst[slot] != HELD -> slot++
  :: slot == NJ -> slot = 0; nheld = 0; nheldp[0] = 0; nheldp[1] = 0; break
  od
}

/* Any queued job; inside atomic{} after nq > 0. */
inline take() {
  slot = 0; seen = 0;
  do
  :: jst[slot] == QUEUED -> break
  :: jst[slot] == QUEUED && seen + 1 < nq -> seen++; slot++
  :: jst[slot] != QUEUED -> slot++
  od;
  jh = jhome[slot]; jp = jpar[slot]; jd = jdep[slot]; jt = jtag[slot];
  jst[slot] = FREE; jhome[slot] = 0; jpar[slot] = 0; jdep[slot] = 0; jtag[slot] = 0;
  nq--; slot = 0; seen = 0
}

/* worker::flush_remote(): one seq_cst fetch_add on the remote home. */
inline flush_remote() {
  atomic {
    if
    :: rc > 0 -> finished[IX(rh, rp)] = finished[IX(rh, rp)] + rc; MARK_DIRTY; rc = 0; rh = 0; rp = 0
    :: else -> skip
    fi
  }
}

#define PARITY_CHANGE(p)  (own[1 - (p)] > 0 || (rc > 0 && rp != (p)))
#define REMOTE_CHANGE(p)  (rc > 0 && (rh != SHARED || rp != (p)))
#define PENDING           (rc > 0 || own[0] > 0 || own[1] > 0)
#if defined(PARITY_FLUSH)
#define STREAM_FLUSHES(p) (REMOTE_CHANGE(p) || PARITY_CHANGE(p))
#elif defined(REQ_FLUSH)
#define STREAM_FLUSHES(p) (REMOTE_CHANGE(p) || (ninprog > 0 && PENDING))
#else
#define STREAM_FLUSHES(p) REMOTE_CHANGE(p)
#endif

/* A job of the feeder's stream retires on this worker: free_remote() (and
 * -DPARITY_FLUSH) hand over what it makes them hand over. */
inline stream_job(p) {
  if
  :: REMOTE_CHANGE(p) -> flush_remote()
  :: else -> skip
  fi;
#if defined(PARITY_FLUSH)
  if
  :: PARITY_CHANGE(p) -> flush_all()
  :: else -> skip
  fi
#elif defined(REQ_FLUSH)
  if
  :: ninprog > 0 && PENDING -> flush_all()      /* flush_now_and_then() */
  :: else -> skip
  fi
#endif
}

/* pool::counting::flush(): the remote batch, then the worker's own counts. */
inline flush_all() {
  flush_remote();
  atomic {
    if
    :: own[0] > 0 -> finished[IX(me, 0)] = finished[IX(me, 0)] + own[0]; own[0] = 0; MARK_DIRTY
    :: else -> skip
    fi
  };
  atomic {
    if
    :: own[1] > 0 -> finished[IX(me, 1)] = finished[IX(me, 1)] + own[1]; own[1] = 0; MARK_DIRTY
    :: else -> skip
    fi
  }
}

proctype worker(byte me) {
  byte slot, seen;
  byte jh, jp, jd, jt;       /* the running job: home, parity, depth, tag */
  byte own[2];               /* worker::finished, per parity */
  byte rh, rp, rc;           /* remote batch: home, parity, count */

end_idle:
  do
  :: atomic { nq > 0 -> take() };                    /* find_work() */
     /* the job runs */
     if
     :: jd > 0 ->
count_spawn:                                          /* relaxed store, then push */
        atomic { spawned[IX(me, jp)]++; live[jt]++; put(me, jp, jd - 1, jt, false) }
     :: else -> skip
     fi;
     /* retire(): free_remote() hands over a batch of another home first */
     if
     :: jh != me && rc > 0 && (rh != jh || rp != jp) -> flush_remote()
     :: else -> skip
     fi;
#ifdef PARITY_FLUSH
     /* a job of the other parity: hand over everything pending first */
     if
     :: PARITY_CHANGE(jp) -> flush_all()
     :: else -> skip
     fi;
#endif
retire:
     atomic {
       live[jt]--;                                    /* the job is over */
       if
       :: jh == me -> own[jp]++                       /* ++self->finished */
       :: else -> rh = jh; rp = jp; rc++              /* free_remote() */
       fi;
       jh = 0; jp = 0; jd = 0; jt = 0
     }
  :: (rc > 0 || own[0] > 0 || own[1] > 0) && FLUSH_NOW ->
flush:                                                /* pool::counting::flush() */
     flush_all()
#ifdef STEADY
  /* The held job stands for the feeder's stream of jobs, which keeps the
   * workers busy: a worker may run one of them (home SHARED, parity of the
   * held job) at any time. Only its effect on the pending counts is
   * modelled (its own count is the held job's, which never balances), and
   * the step is offered only when it has one, so a stuck wait still ends in
   * a state with no move. */
  :: nheldp[0] > 0 && STREAM_FLUSHES(0) -> stream_job(0)
  :: nheldp[1] > 0 && STREAM_FLUSHES(1) -> stream_job(1)
#endif
  od
}

/* An outside thread's submit: count_shared() (+ check_open()), then push(). */
#define HOLD_RULE(may_hold) \
    (may_hold && ninprog > 0 && \
     (!inprog[0] || (ein[0] != NONE && epoch > ein[0])) && \
     (!inprog[1] || (ein[1] != NONE && epoch > ein[1])))

inline submit(dep, may_hold) {
#ifdef EPOCH
  atomic {                                            /* spawn_epoch(): epoch_.load(seq_cst) */
    v = epoch; par = v % 2;
    held = HOLD_RULE(may_hold);
    hg = hold_gen
  };
#else
  par = 0;
#endif
#ifndef RECHECK
  atomic {                                            /* count_shared: fetch_add, seq_cst */
    spawned[IX(SHARED, par)]++;
#ifdef EPOCH
    /* a wait() that began after the epoch was read may wait for this job */
    held = held && hold_gen == hg && ninprog > 0;
#else
    held = may_hold && ninprog > 0;
#endif
    tag = wstart; live[tag]++;
    put(SHARED, par, dep, tag, held)                  /* then push() */
  };
#else
  atomic { spawned[IX(SHARED, par)]++ };             /* count */
  /* the fix: re-read the epoch; if it moved, the count may have landed in a
   * parity already seen drained: count the job in the new epoch's parity,
   * count it finished in the old one, and look again */
  do
  :: atomic {
       v2 = epoch;
       if
       :: v2 == v -> held = HOLD_RULE(may_hold); hg = hold_gen
       :: else -> skip
       fi
     };
     if
     :: v2 == v -> v2 = 0; break
     :: else ->
        atomic { spawned[IX(SHARED, v2 % 2)]++ };
        atomic { finished[IX(SHARED, v % 2)]++; MARK_DIRTY };
        v = v2; par = v % 2; v2 = 0
     fi
  od;
  atomic {                                            /* push: the submission is complete */
    held = held && hold_gen == hg && ninprog > 0;
    tag = wstart; live[tag]++;
    put(SHARED, par, dep, tag, held)
  };
#endif
  par = 0; held = false; tag = 0; hg = 0; v = 0
}

/* One collect over parity p, retried until it reports idle, or until
 * `escape` holds (then escaped is set). */
inline wait_balanced(p, escape) {
  do
  :: escape -> escaped = true; break
  :: else ->
     dirty[me] = false;
     c = 0; s1 = 0;
     do                                               /* spawned: shared cache, then workers */
     :: c < NC -> s1 = s1 + spawned[IX((c + SHARED) % NC, p)]; c++
     :: else -> c = 0; break
     od;
     fin = 0;
     do
     :: c < NC -> fin = fin + finished[IX((c + SHARED) % NC, p)]; c++
     :: else -> c = 0; break
     od;
#ifndef BUG
     s2 = 0;
     do
     :: c < NC -> s2 = s2 + spawned[IX((c + SHARED) % NC, p)]; c++
     :: else -> c = 0; break
     od;
#else
     s2 = s1;
#endif
     if
     :: s1 == s2 && fin == s2 -> s1 = 0; s2 = 0; fin = 0; break
     :: else ->
        s1 = 0; s2 = 0; fin = 0;
        (dirty[me] || escape)                         /* block: cv_.wait */
     fi
  od
}

proctype waiter(byte me) {
  byte i, k, c, s1, s2, fin, e, x, mystart, slot, par, tag, t, hg, v, v2;
  bool held, escaped, old_job_alive, returned_past_held_job;

  i = 0;
  do
  :: i < WAITS ->
     k = 0;
     do
     :: k < R -> submit(RD, false); k++
     :: else -> k = 0; break
     od;
     /* pool::wait() */
wait_begins:
     atomic { mystart = wstart; wstart++; inprog[me] = true; ninprog++; release_held(); hold_gen++ };
#if defined(EPOCH) && defined(DRAIN)
     /* pool::wait() (src/core/wait.cpp) and accounting::drain() */
read_target:
     atomic { e = epoch; ein[me] = e };              /* target = epoch_.load(seq_cst) */
     do
     :: atomic { x = drained };                      /* drained_epoch_.load(acquire) */
        if
        :: x >= e -> x = 0; break
        :: else -> x++                               /* the oldest epoch not known drained */
        fi;
#ifdef DRAIN_FIX
        /* about to reopen parity (x+1)&1: drain it first, unless another
         * waiter flips meanwhile (it drained it then) */
        if
        :: epoch == x -> wait_balanced((x + 1) % 2, (epoch != x)); escaped = false
        :: else -> skip
        fi;
#endif
drain_flip:
        atomic { wmtx == NONE -> wmtx = me };        /* epoch_mutex_ */
        atomic {
          if
          :: epoch == x -> epoch++
          :: else -> skip
          fi
        };
        wmtx = NONE;
drain_wait:
        wait_balanced(x % 2, DRAIN_ESCAPE);
        escaped = false;
drain_record:
        atomic { wmtx == NONE -> wmtx = me };
        atomic {
          if
          :: drained < x -> drained = x               /* drained_epoch_.store(release) */
          :: else -> skip
          fi
        };
        wmtx = NONE
     od;
#elif defined(EPOCH)
read_epoch:
     atomic { e = epoch; ein[me] = e };
step1:
     wait_balanced((e + 1) % 2, false);
step2:
     atomic { wmtx == NONE -> wmtx = me };
     atomic {
       if
       :: epoch == e -> epoch++
       :: else -> skip
       fi
     };
     wmtx = NONE;
step3:
     wait_balanced(e % 2, false);
     escaped = false;
#else
     wait_balanced(0, false);
#endif
wait_returns:
     atomic {
#ifdef REACH
       /* witness: a wait returns while a feeder job is still held back */
       returned_past_held_job = (nheld > 0);
       assert(!returned_past_held_job);
#endif
       t = 0;
       do
       :: t <= mystart -> old_job_alive = (live[t] > 0); assert(!old_job_alive); t++   /* (p1) */
       :: else -> t = 0; break
       od;
       inprog[me] = false; ein[me] = NONE; ninprog--;
       if
       :: ninprog == 0 -> release_held()
       :: else -> skip
       fi;
       waits_done++; mystart = 0; e = 0
     };
     i++
  :: else -> break
  od
}

proctype feeder() {
  byte slot, par, tag, hg, v, v2;
  bool held;
  do
  :: feeder_left > 0 ->
#ifdef STEADY
     submit(FD, true);
#else
     submit(FD, false);
#endif
     feeder_left--
  :: else -> break
  od
}

/* (p2) */
proctype monitor() {
  bool finished_ahead;
end_monitor:
  atomic {
    (finished[0] > spawned[0] || finished[1] > spawned[1] || finished[2] > spawned[2] ||
     finished[3] > spawned[3] || finished[4] > spawned[4] || finished[5] > spawned[5]) ->
    finished_ahead = true;
    assert(!finished_ahead)
  }
}

#ifdef LIVE
ltl all_waits_done { <> (waits_done == WAITERS * WAITS) }
#endif

init {
  byte i;
  assert(W >= 1 && W <= 2 && WAITERS >= 1 && WAITERS <= 2);
  atomic {
    ein[0] = NONE; ein[1] = NONE;
    run monitor();
    i = 0;
    do
    :: i < W -> run worker(i); i++
    :: else -> i = 0; break
    od;
    do
    :: i < WAITERS -> run waiter(i); i++
    :: else -> i = 0; break
    od;
    run feeder()
  }
}
