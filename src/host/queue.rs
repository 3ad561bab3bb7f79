//! Per-reactor FIFO queues and the worker pool of `serve` (HOST.md §9.2): tasks of one reactor
//! never overlap; a pool of `concurrency` workers always takes the oldest waiting task of a
//! reactor that is not already running one; a failing (panicking) task does not stall its queue.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// A queued task: runs the work and returns what delivers its result, which the worker calls
/// only once the reactor no longer counts the task as running (so that a caller reading the
/// queue depth right after the result, GET /status after POST /trigger, does not count it).
type Task = Box<dyn FnOnce() -> Box<dyn FnOnce() + Send> + Send>;

struct State {
    queues: Vec<VecDeque<(u64, Task)>>,
    running: Vec<bool>,
    seq: u64,
    stop: bool,
}

struct Inner {
    state: Mutex<State>,
    cv: Condvar,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pool. Dropping it stops the workers after the queued tasks ran.
pub struct TaskPool {
    inner: Arc<Inner>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for TaskPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskPool")
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// A task's result, delivered when it finished (`None` when it panicked).
pub(crate) type TaskResult<T> = crossbeam_channel::Receiver<Option<T>>;

impl TaskPool {
    /// A pool for `reactors` queues served by `concurrency` (≥ 1) workers.
    pub fn new(reactors: usize, concurrency: usize) -> TaskPool {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                queues: (0..reactors).map(|_| VecDeque::new()).collect(),
                running: vec![false; reactors],
                seq: 0,
                stop: false,
            }),
            cv: Condvar::new(),
        });
        let workers = (0..concurrency.max(1))
            .map(|_| {
                let inner = inner.clone();
                std::thread::spawn(move || worker(&inner))
            })
            .collect();
        TaskPool { inner, workers }
    }

    /// Enqueues `task` on reactor `r`'s queue; the receiver yields its result when it ran.
    pub fn submit<T: Send + 'static>(
        &self,
        r: usize,
        task: impl FnOnce() -> T + Send + 'static,
    ) -> TaskResult<T> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let boxed: Task = Box::new(move || {
            let out = catch_unwind(AssertUnwindSafe(task)).ok();
            Box::new(move || {
                let _ = tx.send(out);
            })
        });
        let mut st = lock(&self.inner.state);
        st.seq += 1;
        let seq = st.seq;
        if let Some(q) = st.queues.get_mut(r) {
            q.push_back((seq, boxed));
        }
        drop(st);
        self.inner.cv.notify_all();
        rx
    }

    /// Waiting tasks plus the running one, for reactor `r` (the `/status` queue depth).
    pub fn depth(&self, r: usize) -> usize {
        let st = lock(&self.inner.state);
        st.queues.get(r).map(VecDeque::len).unwrap_or(0)
            + usize::from(st.running.get(r).copied().unwrap_or(false))
    }

    /// Blocks until every queue is empty and no task runs.
    pub fn wait_idle(&self) {
        let mut st = lock(&self.inner.state);
        while st.queues.iter().any(|q| !q.is_empty()) || st.running.iter().any(|r| *r) {
            st = self.inner.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for TaskPool {
    fn drop(&mut self) {
        self.wait_idle();
        lock(&self.inner.state).stop = true;
        self.inner.cv.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(inner: &Inner) {
    let mut st = lock(&inner.state);
    loop {
        if st.stop {
            return;
        }
        // The oldest waiting task of a reactor that is not running one.
        let pick = st
            .queues
            .iter()
            .enumerate()
            .filter(|(r, q)| !st.running[*r] && !q.is_empty())
            .min_by_key(|(_, q)| q.front().map(|(s, _)| *s).unwrap_or(u64::MAX))
            .map(|(r, _)| r);
        match pick {
            None => {
                st = inner.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            Some(r) => {
                let Some((_, task)) = st.queues[r].pop_front() else {
                    continue;
                };
                st.running[r] = true;
                drop(st);
                let deliver = task();
                st = lock(&inner.state);
                st.running[r] = false;
                inner.cv.notify_all();
                drop(st);
                deliver();
                st = lock(&inner.state);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn tasks_of_one_reactor_never_overlap_and_run_in_order() {
        let pool = TaskPool::new(2, 4);
        let active = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut rx = Vec::new();
        for i in 0..20 {
            let active = active.clone();
            let order = order.clone();
            rx.push(pool.submit(0, move || {
                assert_eq!(active.fetch_add(1, Ordering::SeqCst), 0, "overlap");
                std::thread::sleep(Duration::from_millis(2));
                order.lock().unwrap().push(i);
                active.fetch_sub(1, Ordering::SeqCst);
                i
            }));
        }
        for (i, r) in rx.into_iter().enumerate() {
            assert_eq!(r.recv().unwrap(), Some(i));
        }
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn reactors_run_in_parallel_up_to_the_pool_size() {
        let pool = TaskPool::new(3, 2);
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let rxs: Vec<_> = (0..3)
            .flat_map(|r| {
                let (active, peak) = (active.clone(), peak.clone());
                let pool = &pool;
                (0..3).map(move |_| {
                    let (active, peak) = (active.clone(), peak.clone());
                    pool.submit(r, move || {
                        let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        active.fetch_sub(1, Ordering::SeqCst);
                    })
                })
            })
            .collect();
        for r in rxs {
            r.recv().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_panicking_task_does_not_stall_the_queue() {
        let pool = TaskPool::new(1, 1);
        let bad = pool.submit(0, || -> u8 { panic!("boom") });
        let good = pool.submit(0, || 7u8);
        assert_eq!(bad.recv().unwrap(), None);
        assert_eq!(good.recv().unwrap(), Some(7));
        pool.wait_idle();
        assert_eq!(pool.depth(0), 0);
    }
}
