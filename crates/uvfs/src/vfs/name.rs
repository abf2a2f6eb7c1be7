//! [`Name`]: a directory entry's name, shared by the dentry, its dcache node and the
//! filesystem's own directory.
//!
//! One word. A name of at most [`INLINE_MAX`] bytes (7 on 64-bit targets) is kept in the word
//! itself: its first byte in memory is `len << 1 | 1`, the bytes follow (Linux keeps names of
//! up to 32 bytes inside the dentry, `DNAME_INLINE_LEN`; here the word is the inline room).
//! A longer one is one allocation holding a 4-byte reference count, the 4-byte length and the
//! bytes, whose address, at least 4-aligned, has the low bit clear. `Arc<[u8]>` would take two
//! words in each holder and a 16-byte header (issue 7, compact objects: a short name costs no
//! allocation at all, and a longer one of at most 8 bytes a 16-byte block instead of 24).
#![allow(unsafe_code)] // Reason: a tagged word, or a hand-counted shared allocation of a header and its bytes.

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
///
/// The word is either the address of a `Header` (low bit clear) or an inline name (the first
/// byte in memory has its low bit set; made without provenance and never dereferenced).
pub struct Name(NonNull<Header>);

/// Whether short names are kept in the word: on little-endian targets only, where the tag
/// byte (the first in memory) is the address's low byte, clear in every block address.
const INLINE: bool = cfg!(target_endian = "little");

/// The longest name kept in the word itself: the word less its tag byte.
pub const INLINE_MAX: usize = std::mem::size_of::<usize>() - 1;

// A heap name's header is at least 2-aligned, so its address's low bit is clear.
const _: () = assert!(std::mem::align_of::<Header>() >= 2);

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
        if Name::fits_inline(bytes.len()) {
            let p = std::ptr::without_provenance_mut::<Header>(Name::inline_word(bytes));
            // The tag bit makes the word non-zero.
            return Name(NonNull::new(p).expect("a tagged word is not null"));
        }
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

    /// The word's first byte in memory: an inline name's tag, or a byte of an address.
    #[inline(always)]
    fn tag(&self) -> u8 {
        self.0.as_ptr().addr().to_ne_bytes()[0]
    }

    /// True if the bytes are in the word (no block).
    #[inline(always)]
    fn is_inline(&self) -> bool {
        INLINE && self.tag() & 1 == 1
    }

    /// Whether a name of `len` bytes is kept in the word.
    #[inline(always)]
    pub(crate) fn fits_inline(len: usize) -> bool {
        INLINE && len <= INLINE_MAX
    }

    /// The word of the inline name `bytes` (`fits_inline(bytes.len())`), built from loads of
    /// the bytes rather than byte by byte: how `new` makes one, and what a lookup compares
    /// with a stored name's word, one comparison for the whole name ([`Name::word`]). On a
    /// little-endian target its first byte in memory is the tag, the bytes follow.
    #[inline(always)]
    pub(crate) fn inline_word(bytes: &[u8]) -> usize {
        debug_assert!(Name::fits_inline(bytes.len()));
        let le = crate::vfs::dcache::load_short(bytes);
        ((le << 8) | ((bytes.len() as u64) << 1) | 1) as usize
    }

    /// The word: for an inline name, its tag and bytes ([`Name::inline_word`]); otherwise an
    /// address, which no inline word equals (its low bit is clear).
    #[inline(always)]
    pub(crate) fn word(&self) -> usize {
        self.0.as_ptr().addr()
    }

    /// The block of a name that is not inline.
    #[inline(always)]
    fn header(&self) -> &Header {
        debug_assert!(!self.is_inline());
        // SAFETY: not inline, so the word is the address of a block that lives while this
        // reference does.
        unsafe { self.0.as_ref() }
    }

    /// The bytes.
    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8] {
        if self.is_inline() {
            let len = usize::from(self.tag() >> 1);
            // SAFETY: the word's bytes 1..=len are the name (`len <= INLINE_MAX`), part of
            // `self`, which outlives the borrow.
            return unsafe {
                std::slice::from_raw_parts(std::ptr::from_ref(&self.0).cast::<u8>().add(1), len)
            };
        }
        let len = self.header().len as usize;
        // SAFETY: `len` bytes follow the header, initialised at creation and never written
        // again, alive while this reference is.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(1).cast::<u8>(), len) }
    }

    /// True if `a` and `b` are the same block, or the same inline name.
    pub fn ptr_eq(a: &Name, b: &Name) -> bool {
        a.0 == b.0
    }
}

impl Clone for Name {
    #[inline]
    fn clone(&self) -> Name {
        if self.is_inline() {
            return Name(self.0);
        }
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
        if self.is_inline() {
            return;
        }
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
        for len in [0usize, 1, 6, 7, 8, 9, 255, 4096] {
            // Every byte value, 0 and 0xff included, in the inline ones too.
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 255) as u8).collect();
            let a = Name::new(&bytes);
            assert_eq!(a.is_inline(), len <= INLINE_MAX, "{len}");
            let b = a.clone();
            assert!(Name::ptr_eq(&a, &b));
            assert_eq!(&*a, &bytes[..]);
            drop(a);
            assert_eq!(&*b, &bytes[..]);
            let c = Name::from(&bytes[..]);
            assert_eq!(b, c);
            if len > INLINE_MAX {
                assert_eq!(b.header().count.load(Ordering::Relaxed), 1);
                assert!(!Name::ptr_eq(&b, &c));
            }
            checks += 1;
        }
        assert_eq!(checks, 8);
        // Names that differ only in length or in their last byte stay different.
        assert_ne!(Name::new(b"ab"), Name::new(b"ab\0"));
        assert_ne!(Name::new(b"abcdefg"), Name::new(b"abcdefh"));
        assert_eq!(std::mem::size_of::<Option<Name>>(), 8);
    }

    #[test]
    fn clones_on_other_threads_are_counted() {
        let n = Name::new(b"shared, longer than a word");
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let n = n.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        let c = n.clone();
                        assert_eq!(&*c, b"shared, longer than a word");
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
