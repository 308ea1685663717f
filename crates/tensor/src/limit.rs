//! The one cap on the size of a tensor tessera allocates, on every path
//! (the interpreter's tensors, the compiled path's buffers): 2^28 elements
//! (1 GiB of float32) unless the environment variable
//! `TESSERA_MAX_ELEMENTS` says otherwise. A program whose tensor is larger
//! gets an error naming the tensor and its size before anything is
//! allocated, instead of exhausting the machine's memory.

use std::sync::OnceLock;

/// The cap when the environment does not set one.
pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 28;

/// The environment variable that sets the cap.
pub const MAX_ELEMENTS_VAR: &str = "TESSERA_MAX_ELEMENTS";

/// The cap, read from the environment once.
pub fn max_elements() -> Result<usize, String> {
    static CAP: OnceLock<Result<usize, String>> = OnceLock::new();
    CAP.get_or_init(|| match std::env::var(MAX_ELEMENTS_VAR) {
        Err(_) => Ok(DEFAULT_MAX_ELEMENTS),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{MAX_ELEMENTS_VAR} is `{v}`, not a positive integer")),
    })
    .clone()
}

/// An error unless tensor `name` of `count` elements (`None`: more than a
/// `usize` counts) is within the cap; `shape`, where known, is shown in the
/// error.
pub fn check_elements(name: &str, shape: Option<&str>, count: Option<usize>) -> Result<(), String> {
    let cap = max_elements()?;
    match count {
        Some(n) if n <= cap => Ok(()),
        _ => {
            let count = count.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
            let what = shape.map_or_else(String::new, |s| format!("shape {s} has "));
            Err(format!(
                "tensor `{name}` is too large: {what}{count} elements, more than the limit of {cap} ({MAX_ELEMENTS_VAR} sets it)"
            ))
        }
    }
}
