//! [`Buffer`]: zeroed, 64-byte-aligned memory, the storage of every tensor
//! and of every slot a compiled program runs on.

use crate::element::Element;

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
#[derive(Clone, Debug, Default)]
pub struct Buffer {
    lines: Vec<Line>,
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
        Buffer { lines }
    }

    /// A buffer holding `values` (and zeros after them, up to the line).
    pub fn from_slice<T: Element>(values: &[T]) -> Buffer {
        let mut b = Buffer::zeroed(size_of_val(values));
        b.typed_mut::<T>()[..values.len()].copy_from_slice(values);
        b
    }

    /// The size in bytes (a multiple of 64).
    pub fn bytes(&self) -> usize {
        self.lines.len() * 64
    }

    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.lines)
    }

    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.lines)
    }

    /// The whole buffer as elements of `T` (64 is a multiple of every
    /// element size, so nothing is left over).
    pub fn typed<T: Element>(&self) -> &[T] {
        bytemuck::cast_slice(&self.lines)
    }

    pub fn typed_mut<T: Element>(&mut self) -> &mut [T] {
        bytemuck::cast_slice_mut(&mut self.lines)
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
        self.lines.as_ptr().cast()
    }

    /// The address of the first byte, for code that writes the buffer.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.lines.as_mut_ptr().cast()
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
