//! What the thread and lock benchmarks (and the mmap bandwidth test) share:
//! a pthread mutex as C servers use it, and a guard that runs a closure on
//! drop (so workers stop and mappings go away on every exit path).

use std::cell::UnsafeCell;

/// A pthread mutex (the default, sleeping kind C servers use).
pub(crate) struct PMutex(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Sync for PMutex {}

impl PMutex {
    pub fn new() -> Self {
        PMutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER))
    }
    pub fn lock(&self) {
        // SAFETY: the mutex was initialized by PTHREAD_MUTEX_INITIALIZER and lives in this struct,
        // which is not moved while shared.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
    }
    /// The pthread mutex itself, for a condition variable's wait.
    pub fn as_ptr(&self) -> *mut libc::pthread_mutex_t {
        self.0.get()
    }
    pub fn unlock(&self) {
        // SAFETY: unlocks the initialized mutex this thread locked in `lock`.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
    }
}

impl Drop for PMutex {
    fn drop(&mut self) {
        // SAFETY: dropped: nobody holds or waits on the mutex any more.
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// Runs a closure when dropped.
pub(crate) struct OnDrop<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}
