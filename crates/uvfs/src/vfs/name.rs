//! [`Name`]: a directory entry's name, shared by the dentry, its dcache node and the
//! filesystem's own directory.
//!
//! One allocation holds a 4-byte reference count, the 4-byte length and the bytes, reached
//! through one pointer: `Arc<[u8]>` takes two words in each holder and a 16-byte header
//! (issue 7, compact objects: a name of at most 8 bytes is a 16-byte block instead of 24, and
//! each of its three holders is a word smaller).
#![allow(unsafe_code)] // Reason: a hand-counted shared allocation of a header and its bytes.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

/// The start of a name's block; the bytes follow it.
#[repr(C)]
struct Header {
    count: AtomicU32,
    len: u32,
}

/// A shared, immutable byte string (a file name; at most `u32::MAX` bytes).
pub struct Name(NonNull<Header>);

// SAFETY: the bytes never change after creation and the count is atomic, as in `Arc<[u8]>`.
unsafe impl Send for Name {}
// SAFETY: as above.
unsafe impl Sync for Name {}

/// More references than this abort, as `Arc` does past `isize::MAX` (a name has a handful).
const MAX_COUNT: u32 = i32::MAX as u32;

fn layout(len: usize) -> Layout {
    let size = std::mem::size_of::<Header>()
        .checked_add(len)
        .expect("a name fits in memory");
    Layout::from_size_align(size, std::mem::align_of::<Header>()).expect("a valid layout")
}

impl Name {
    /// A new name holding a copy of `bytes`.
    ///
    /// # Panics
    /// If `bytes` is longer than `u32::MAX` (names are at most `NAME_MAX` long; a longer
    /// one is refused before any is made).
    pub fn new(bytes: &[u8]) -> Name {
        let len = u32::try_from(bytes.len()).expect("a name is shorter than 4 GiB");
        let layout = layout(bytes.len());
        // SAFETY: the layout is at least the header's size, so not zero-sized.
        let p = unsafe { alloc(layout) }.cast::<Header>();
        let Some(p) = NonNull::new(p) else {
            handle_alloc_error(layout)
        };
        // SAFETY: `p` is a fresh block of `layout`: room for the header and `len` bytes
        // after it, which nothing else can reach yet.
        unsafe {
            p.as_ptr().write(Header {
                count: AtomicU32::new(1),
                len,
            });
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                p.as_ptr().add(1).cast::<u8>(),
                bytes.len(),
            );
        }
        Name(p)
    }

    #[inline(always)]
    fn header(&self) -> &Header {
        // SAFETY: the block lives while this reference does.
        unsafe { self.0.as_ref() }
    }

    /// The bytes.
    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.header().len as usize;
        // SAFETY: `len` bytes follow the header, initialised at creation and never written
        // again, alive while this reference is.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(1).cast::<u8>(), len) }
    }

    /// True if `a` and `b` are the same block (not only equal bytes).
    pub fn ptr_eq(a: &Name, b: &Name) -> bool {
        a.0 == b.0
    }
}

impl Clone for Name {
    #[inline]
    fn clone(&self) -> Name {
        // Relaxed, as `Arc::clone`: a new reference is made from one the caller holds.
        let old = self.header().count.fetch_add(1, Ordering::Relaxed);
        if old > MAX_COUNT {
            std::process::abort();
        }
        Name(self.0)
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        // Release, then an acquire fence before the free, as `Arc`'s drop: every use of the
        // bytes through other references happens before the block is freed.
        if self.header().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let len = self.header().len as usize;
        // SAFETY: this was the last reference; the block was allocated with this layout.
        unsafe { dealloc(self.0.as_ptr().cast::<u8>(), layout(len)) };
    }
}

impl Deref for Name {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Name {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl From<&[u8]> for Name {
    fn from(bytes: &[u8]) -> Name {
        Name::new(bytes)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Name {}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_keeps_its_bytes_through_clones_and_drops() {
        let mut checks = 0;
        for len in [0usize, 1, 7, 8, 9, 255, 4096] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
            let a = Name::new(&bytes);
            let b = a.clone();
            assert!(Name::ptr_eq(&a, &b));
            assert_eq!(&*a, &bytes[..]);
            drop(a);
            assert_eq!(&*b, &bytes[..]);
            assert_eq!(b.header().count.load(Ordering::Relaxed), 1);
            let c = Name::from(&bytes[..]);
            assert!(!Name::ptr_eq(&b, &c));
            assert_eq!(b, c);
            checks += 1;
        }
        assert_eq!(checks, 7);
    }

    #[test]
    fn clones_on_other_threads_are_counted() {
        let n = Name::new(b"shared");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let n = n.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        let c = n.clone();
                        assert_eq!(&*c, b"shared");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("no thread panics");
        }
        assert_eq!(n.header().count.load(Ordering::Relaxed), 1);
    }
}
