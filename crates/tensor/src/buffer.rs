//! [`Buffer`]: zeroed, 64-byte-aligned memory, the storage of every tensor
//! and of every slot a compiled program runs on; or a caller's memory read
//! in place ([`Foreign`]), copied into memory of its own before its first
//! write.

use crate::element::Element;
use crate::foreign::Foreign;

/// 64 bytes aligned to 64: the unit of storage, so that every buffer starts
/// on a cache line (and an AVX-512 vector).
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Line([u8; 64]);

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Line")
    }
}

/// Buffers of at least this many bytes ask the operating system for
/// transparent huge pages. A kernel that reads a large tensor at random
/// places (an embedding table's rows) otherwise misses the TLB on nearly
/// every read: 4 KiB pages cover only a few MiB of it, 2 MiB pages cover
/// gigabytes. Below this size a buffer spans too few huge pages to matter.
const HUGE_PAGE_BUFFER: usize = 4 << 20;

/// Zeroed, 64-byte-aligned memory of a fixed size, viewed as elements of any
/// [`Element`] type.
///
/// Cloning copies the contents. Buffers of 4 MiB or more are advised to use
/// transparent huge pages before their zeros are written, as numpy does.
///
/// A buffer made by [`Buffer::foreign`] reads a caller's memory in place
/// (aligned to [`crate::FOREIGN_ALIGN`], of exactly its own size): it is
/// never written, because every mutable access first copies it into
/// memory of the buffer's own.
#[derive(Debug)]
pub struct Buffer {
    storage: Storage,
}

#[derive(Debug)]
enum Storage {
    Lines(Vec<Line>),
    Foreign(Foreign),
}

impl Default for Buffer {
    fn default() -> Buffer {
        Buffer {
            storage: Storage::Lines(Vec::new()),
        }
    }
}

impl Clone for Buffer {
    /// A copy of the contents in memory of its own.
    fn clone(&self) -> Buffer {
        match &self.storage {
            Storage::Lines(lines) => Buffer {
                storage: Storage::Lines(lines.clone()),
            },
            Storage::Foreign(f) => Buffer::owned_copy(f.bytes()),
        }
    }
}

impl Buffer {
    /// At least `bytes` zeroed bytes (rounded up to whole 64-byte lines).
    ///
    /// # Panics
    ///
    /// Like `vec!`, if the memory cannot be allocated.
    pub fn zeroed(bytes: usize) -> Buffer {
        let count = bytes.div_ceil(64);
        let mut lines: Vec<Line> = Vec::with_capacity(count);
        if count * 64 >= HUGE_PAGE_BUFFER {
            crate::os::advise_huge_pages(lines.as_mut_ptr().cast(), count * 64);
        }
        // The zeros are written after the advice, so the pages they fault
        // in are already huge ones.
        lines.resize(count, Line([0; 64]));
        Buffer {
            storage: Storage::Lines(lines),
        }
    }

    /// A caller's memory, read in place (see [`Foreign`]).
    pub fn foreign(memory: Foreign) -> Buffer {
        Buffer {
            storage: Storage::Foreign(memory),
        }
    }

    /// Whether the buffer reads a caller's memory in place.
    pub fn is_foreign(&self) -> bool {
        matches!(self.storage, Storage::Foreign(_))
    }

    /// `bytes` copied into memory of the buffer's own.
    fn owned_copy(bytes: &[u8]) -> Buffer {
        let mut b = Buffer::zeroed(bytes.len());
        b.as_bytes_mut()[..bytes.len()].copy_from_slice(bytes);
        b
    }

    /// The buffer's own lines, copying a caller's memory into them first.
    fn lines_mut(&mut self) -> &mut Vec<Line> {
        if let Storage::Foreign(f) = &self.storage {
            *self = Buffer::owned_copy(f.bytes());
        }
        match &mut self.storage {
            Storage::Lines(lines) => lines,
            Storage::Foreign(_) => unreachable!("a foreign buffer was just copied"),
        }
    }

    /// A buffer holding `values` (and zeros after them, up to the line).
    pub fn from_slice<T: Element>(values: &[T]) -> Buffer {
        let mut b = Buffer::zeroed(size_of_val(values));
        b.typed_mut::<T>()[..values.len()].copy_from_slice(values);
        b
    }

    /// The size in bytes (a multiple of 64, but for a caller's memory).
    pub fn bytes(&self) -> usize {
        self.as_bytes().len()
    }

    pub fn as_bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Lines(lines) => bytemuck::cast_slice(lines),
            Storage::Foreign(f) => f.bytes(),
        }
    }

    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self.lines_mut())
    }

    /// The whole buffer as elements of `T` (64 is a multiple of every
    /// element size, so nothing is left over; of a caller's memory, the
    /// whole elements).
    pub fn typed<T: Element>(&self) -> &[T] {
        let bytes = self.as_bytes();
        bytemuck::cast_slice(&bytes[..bytes.len() - bytes.len() % size_of::<T>()])
    }

    pub fn typed_mut<T: Element>(&mut self) -> &mut [T] {
        bytemuck::cast_slice_mut(self.lines_mut())
    }

    /// The first `len` elements as `T`, if they fit.
    pub fn view<T: Element>(&self, len: usize) -> Option<&[T]> {
        self.typed::<T>().get(..len)
    }

    /// The first `len` elements as `T`, mutably, if they fit.
    pub fn view_mut<T: Element>(&mut self, len: usize) -> Option<&mut [T]> {
        self.typed_mut::<T>().get_mut(..len)
    }

    /// The address of the first byte, for code that reads the buffer
    /// (compiled kernels).
    pub fn as_ptr(&self) -> *const u8 {
        self.as_bytes().as_ptr()
    }

    /// The address of the first byte, for code that writes the buffer (a
    /// caller's memory is copied into the buffer's own first).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.lines_mut().as_mut_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_and_whole_lines() {
        for bytes in [0, 1, 63, 64, 65, 1000, 5 << 20] {
            let b = Buffer::zeroed(bytes);
            assert!(b.bytes() >= bytes && b.bytes().is_multiple_of(64));
            assert_eq!(b.as_ptr() as usize % 64, 0);
            assert!(b.as_bytes().iter().all(|&x| x == 0));
        }
        let b = Buffer::from_slice(&[1.5f32, -2.0]);
        assert_eq!(b.view::<f32>(2), Some(&[1.5f32, -2.0][..]));
        assert_eq!(b.bytes(), 64);
        assert!(b.view::<f32>(17).is_none());
    }
}
