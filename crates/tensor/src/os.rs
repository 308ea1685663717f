//! The operating-system calls behind tensors: memory-mapped files and
//! memory advice. This is the tensor crate's only `unsafe` code (the
//! workspace denies it elsewhere, but for `codegen::load`, which calls
//! compiled kernels); each block says why it is sound.

#![allow(unsafe_code)]

use std::path::Path;

/// A file mapped read-only into memory, as model weights are read: pages
/// come in from the file as they are touched, and [`MappedFile::release`]
/// gives back the pages of a range whose contents have been converted, so
/// that a model's bytes and its converted tensors are not resident at once.
#[derive(Debug)]
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps the regular file at `path` (anything else is refused, see
    /// [`crate::file::open_regular`]).
    pub fn open(path: &Path) -> std::io::Result<MappedFile> {
        let (file, _) = crate::file::open_regular(path)?;
        // SAFETY: the map is private and read-only, so nothing tessera does
        // can write through it. Another process truncating or rewriting the
        // file while it is mapped would change or invalidate the bytes under
        // us; like every program that maps its inputs (and as memmap2
        // documents), tessera assumes a model file is not modified while it
        // is being loaded. The bytes are only ever read as `u8`, for which
        // every bit pattern is valid.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        Ok(MappedFile { map })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Gives back the whole pages inside `bytes`, a range of this map: the
    /// next read of them faults the file's contents in again, so this only
    /// lowers resident memory. A range outside the map is ignored.
    pub fn release(&self, bytes: &[u8]) {
        let base = self.map.as_ptr() as usize;
        let (start, end) = (
            bytes.as_ptr() as usize,
            bytes.as_ptr() as usize + bytes.len(),
        );
        if start < base || end > base + self.map.len() {
            return;
        }
        release_pages(start, end);
    }
}

const PAGE: usize = 4096;

#[cfg(target_os = "linux")]
fn release_pages(start: usize, end: usize) {
    let (lo, hi) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
    if hi > lo {
        // SAFETY: `lo..hi` lies inside this object's private, read-only file
        // mapping (checked by the caller against the map's bounds). For such
        // a mapping MADV_DONTNEED drops the resident copies of the pages; a
        // later access reads the same file contents back in, so no byte
        // anyone can observe changes. Failure only leaves the pages resident.
        let _ = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED) };
    }
}

#[cfg(not(target_os = "linux"))]
fn release_pages(_start: usize, _end: usize) {}

/// Advises the system to back the whole pages inside the `len` bytes at
/// `ptr` (an allocation the caller owns and has not yet written) with
/// transparent huge pages. Where the system has them only on request
/// (`madvise` mode) this is the request; where it has none the advice
/// fails, and the memory keeps small pages, so the result is ignored.
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge_pages(ptr: *mut u8, len: usize) {
    let (start, end) = (
        (ptr as usize).next_multiple_of(PAGE),
        (ptr as usize).saturating_add(len) / PAGE * PAGE,
    );
    if end > start {
        // SAFETY: `start..end` lies inside the caller's allocation of `len`
        // bytes at `ptr`; MADV_HUGEPAGE changes only how the system backs
        // those pages, not their contents or who may access them.
        let _ =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Without Linux's transparent huge pages there is nothing to ask for.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_file_reads_its_bytes_and_survives_release() {
        let dir = std::env::temp_dir().join(format!("tensor-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.bin");
        let data: Vec<u8> = (0..3 * PAGE + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let m = MappedFile::open(&path).unwrap();
        assert_eq!(m.bytes(), &data[..]);
        // Released pages read back the file's contents.
        m.release(&m.bytes()[10..3 * PAGE]);
        assert_eq!(m.bytes(), &data[..]);
        // A range outside the map is ignored.
        m.release(&data[..]);
        assert_eq!(m.bytes(), &data[..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
