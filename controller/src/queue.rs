//! The work queue of the controller: instance names with a due time.
//!
//! Enqueueing a name that is already queued keeps the earliest due time, so
//! a burst of events becomes one reconcile. A name being reconciled is never
//! handed out again until it is done; a request that arrives meanwhile is
//! kept and becomes due when the running reconcile finishes.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Default)]
struct State {
    due: HashMap<String, Instant>,
    running: HashSet<String>,
    /// Requests that arrived while their name was running.
    deferred: HashMap<String, Instant>,
    closed: bool,
}

#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    wake: Notify,
}

fn keep_earliest(map: &mut HashMap<String, Instant>, name: &str, at: Instant) {
    map.entry(name.to_owned())
        .and_modify(|due| *due = (*due).min(at))
        .or_insert(at);
}

impl Queue {
    /// Asks for `name` to be reconciled at `at` (or earlier, if already asked).
    pub fn enqueue(&self, name: &str, at: Instant) {
        let mut state = self.state.lock().expect("queue lock");
        if state.running.contains(name) {
            keep_earliest(&mut state.deferred, name, at);
        } else {
            keep_earliest(&mut state.due, name, at);
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Asks for `name` at exactly `at`, replacing any earlier request: a
    /// failed reconcile's retry time stands over the hints its own engine
    /// actions caused while it ran.
    pub fn reschedule(&self, name: &str, at: Instant) {
        let mut state = self.state.lock().expect("queue lock");
        if state.running.contains(name) {
            state.deferred.insert(name.to_owned(), at);
        } else {
            state.deferred.remove(name);
            state.due.insert(name.to_owned(), at);
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Claims `name` now if nobody is reconciling it; for passes that walk
    /// every instance outside the queue. Drops a pending request for it,
    /// which the pass fulfils.
    pub fn try_claim(&self, name: &str) -> bool {
        let mut state = self.state.lock().expect("queue lock");
        if state.running.contains(name) {
            return false;
        }
        state.due.remove(name);
        state.running.insert(name.to_owned())
    }

    /// Marks `name` finished; a request deferred while it ran becomes due.
    pub fn done(&self, name: &str) {
        let mut state = self.state.lock().expect("queue lock");
        state.running.remove(name);
        if let Some(at) = state.deferred.remove(name) {
            keep_earliest(&mut state.due, name, at);
        }
        drop(state);
        self.wake.notify_one();
    }

    /// The names waiting: due now or later, or asked for again while
    /// they run.
    pub fn depth(&self) -> usize {
        let state = self.state.lock().expect("queue lock");
        state.due.len() + state.deferred.len()
    }

    /// Stops handing out work; `next` returns `None` from now on.
    pub fn close(&self) {
        self.state.lock().expect("queue lock").closed = true;
        self.wake.notify_waiters();
    }

    /// Waits for the earliest due name that is not running, and claims it.
    pub async fn next(&self) -> Option<String> {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            // Registered before the state is read, so no wake-up is lost.
            notified.as_mut().enable();
            let earliest = {
                let mut state = self.state.lock().expect("queue lock");
                if state.closed {
                    return None;
                }
                let earliest = state
                    .due
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(name, at)| (name.clone(), *at));
                match earliest {
                    Some((name, at)) if at <= Instant::now() => {
                        state.due.remove(&name);
                        state.running.insert(name.clone());
                        return Some(name);
                    }
                    other => other.map(|(_, at)| at),
                }
            };
            match earliest {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = &mut notified => {}
                    }
                }
                None => notified.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reschedule_replaces_earlier_requests_even_while_running() {
        let queue = Queue::default();
        let now = Instant::now();
        queue.enqueue("a", now);
        assert_eq!(queue.next().await.as_deref(), Some("a"));
        // While it runs: a hint for now, then the failure's retry time.
        queue.enqueue("a", now);
        let later = now + Duration::from_secs(3600);
        queue.reschedule("a", later);
        queue.done("a");
        let state = queue.state.lock().unwrap();
        assert_eq!(state.due.get("a"), Some(&later));
        assert!(state.deferred.is_empty());
    }
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn earliest_due_wins_and_bursts_collapse() {
        let queue = Queue::default();
        let now = Instant::now();
        queue.enqueue("a", now + Duration::from_secs(10));
        queue.enqueue("a", now + Duration::from_secs(1));
        queue.enqueue("a", now + Duration::from_secs(5));
        queue.enqueue("b", now + Duration::from_secs(3));
        assert_eq!(queue.next().await.as_deref(), Some("a"));
        assert!(Instant::now() >= now + Duration::from_secs(1));
        assert_eq!(queue.next().await.as_deref(), Some("b"));
        queue.done("a");
        queue.done("b");
        // Nothing else was queued: the three requests for `a` were one.
        queue.close();
        assert_eq!(queue.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_name_is_not_handed_out_twice() {
        let queue = Queue::default();
        queue.enqueue("a", Instant::now());
        assert_eq!(queue.next().await.as_deref(), Some("a"));
        // Asked for again while running: deferred, not handed out.
        queue.enqueue("a", Instant::now());
        assert!(!queue.try_claim("a"));
        let waiting = tokio::time::timeout(Duration::from_secs(60), queue.next()).await;
        assert!(waiting.is_err(), "handed out a running name");
        queue.done("a");
        assert_eq!(queue.next().await.as_deref(), Some("a"));
    }
}
