//! Memory that tessera did not allocate: a caller's array (a NumPy array,
//! a DLPack tensor) that a [`crate::Buffer`] reads in place, so that an
//! input is not copied on its way into a compiled program. Besides `os.rs`,
//! this is the tensor crate's only `unsafe` code.
//!
//! Requires: whoever makes one promises that the memory stays valid and
//! unchanged for as long as the owner it hands over is alive. Guarantees:
//! the memory is only ever read, as bytes, while the owner is held.

#![allow(unsafe_code)]

use std::ptr::NonNull;

/// The alignment a caller's memory needs to be read in place: a multiple
/// of every element type's size, and of a 128-bit vector's. Memory from
/// `malloc` has it; a view starting at an odd element does not, and is
/// copied once instead.
pub const FOREIGN_ALIGN: usize = 16;

/// A read-only range of a caller's memory and what keeps it alive.
pub struct Foreign {
    ptr: NonNull<u8>,
    len: usize,
    /// Dropped after the last read: releasing it may free the memory.
    _owner: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Foreign({:p}, {} bytes)", self.ptr, self.len)
    }
}

// SAFETY: a `Foreign` only reads its memory (it hands out `&[u8]` and
// never a mutable reference), and its owner is `Send + Sync`; sharing
// read-only access between threads is sound as long as nobody writes the
// memory meanwhile, which the maker of a `Foreign` promises (see `new`).
unsafe impl Send for Foreign {}
// SAFETY: as for `Send`: shared access is read-only.
unsafe impl Sync for Foreign {}

impl Foreign {
    /// `len` bytes at `ptr`, kept alive by `owner`; `None` when `ptr` is
    /// null or not aligned to [`FOREIGN_ALIGN`].
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `len` bytes, and those bytes must
    /// not be written or freed, for as long as `owner` is alive.
    pub unsafe fn new(ptr: *const u8, len: usize, owner: Box<dyn Send + Sync>) -> Option<Foreign> {
        let ptr = NonNull::new(ptr.cast_mut())?;
        if !(ptr.as_ptr() as usize).is_multiple_of(FOREIGN_ALIGN) {
            return None;
        }
        Some(Foreign {
            ptr,
            len,
            _owner: owner,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `new`'s caller promised `len` readable bytes at `ptr`,
        // unchanged while the owner lives; `self` holds the owner for at
        // least as long as the returned borrow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_memory_is_read_in_place_and_copied_before_a_write() {
        use std::sync::Arc;
        let owner: Arc<crate::Buffer> = Arc::new(crate::Buffer::from_slice(&[1.0f32, 2.0, 3.0]));
        let ptr = owner.as_ptr();
        // SAFETY: `owner` keeps the 12 bytes alive and nothing writes them.
        let memory = unsafe { Foreign::new(ptr, 12, Box::new(owner.clone())) }.unwrap();
        let mut b = crate::Buffer::foreign(memory);
        assert!(b.is_foreign());
        assert_eq!(b.as_ptr(), ptr);
        assert_eq!(b.bytes(), 12);
        assert_eq!(b.typed::<f32>(), &[1.0, 2.0, 3.0]);
        assert_eq!(b.typed::<f64>().len(), 1);
        b.typed_mut::<f32>()[0] = 9.0;
        assert!(!b.is_foreign());
        assert_ne!(b.as_ptr(), ptr);
        assert_eq!(owner.view::<f32>(1), Some(&[1.0f32][..]));
        assert_eq!(b.view::<f32>(3), Some(&[9.0f32, 2.0, 3.0][..]));
        // Misaligned memory is refused rather than read in place.
        // SAFETY: as above, 4 bytes in.
        let odd = unsafe { Foreign::new(ptr.wrapping_add(4), 8, Box::new(owner.clone())) };
        assert!(odd.is_none());
    }
}
