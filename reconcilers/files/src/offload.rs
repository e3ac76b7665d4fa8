//! Work that blocks (git, file locks, the filesystem), run off the async
//! runtime so that it never stalls the tasks beside it.

/// Runs `work` on the runtime's blocking pool and returns its result. A
/// panic in `work` is carried on to the caller, as if it had run inline.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("blocking work did not finish: {e}"),
    }
}
