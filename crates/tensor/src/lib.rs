//! tessera's one tensor type, shared by every stage without copies, and
//! the opening of the files tensors come from ([`file`]: regular files
//! only, text within a limit).
//!
//! A [`Tensor`] is an element type, a shape, strides and an offset over a
//! [`Buffer`]: zeroed, 64-byte-aligned memory (a cache line, an AVX-512
//! vector) held by an `Arc`, so that clones, views ([`Tensor::reshape`],
//! [`Tensor::permute`], [`Tensor::slice`]) and hand-overs between the
//! interpreter, the runtime and the frontends share one allocation.
//! Elements are stored in their own type ([`Element`]): `float32` as `f32`,
//! `bool` as one byte holding 0 or 1, `uint64` as `u64`. Writing through a
//! tensor whose buffer is shared copies it first (copy on write), so a view
//! never changes what another tensor sees.
//!
//! [`MappedFile`] maps a file (model weights) read-only into memory; its
//! pages can be given back once their contents have been converted. The
//! operating-system calls behind it and behind huge-page advice for large
//! buffers are, with the reading of a caller's memory in place
//! ([`Foreign`], `foreign.rs`), the crate's only `unsafe` code.
//!
//! Depends on `ir` (element types and scalar values) and nothing else of
//! tessera's.

mod buffer;
mod element;
pub mod file;
mod foreign;
mod limit;
mod os;
mod random;
mod tensor;

pub use buffer::Buffer;
pub use element::{element_bytes, Element};
pub use foreign::{Foreign, FOREIGN_ALIGN};
pub use limit::{check_elements, max_elements, DEFAULT_MAX_ELEMENTS, MAX_ELEMENTS_VAR};
pub use os::MappedFile;
pub use random::SplitMix64;
pub use tensor::{element_count, row_major_strides, show_tuple, Tensor, TensorError};
