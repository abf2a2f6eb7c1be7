//! fsnotify: the notification core under inotify (and fanotify). Linux: fs/notify/.

use crate::sync::atomic::{AtomicBool, Ordering};

/// Whether notification is compiled in (the `notify` cargo feature, on by default). Without
/// it every hook is empty and `inotify_init1` fails with `ENOSYS`, as Linux built without
/// `CONFIG_INOTIFY_USER`.
pub const COMPILED: bool = cfg!(feature = "notify");

static VANILLA: AtomicBool = AtomicBool::new(false);

/// Benchmarks only: makes every hook enter the mark read side and walk the (empty) mark
/// lists even when nothing is watched, as Linux did before 2015, for the `uvfs-vanilla`
/// column of `uvfs bench write1`. Never on by default.
#[doc(hidden)]
pub fn set_vanilla_hooks(on: bool) {
    VANILLA.store(on, Ordering::Relaxed);
}
