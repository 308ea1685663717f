//! A structural check of a shared object before the dynamic loader maps
//! it: an ELF64 little-endian file whose program and section header tables
//! and every segment and section with contents lie inside the file.
//!
//! The cache's sidecar hash proves an object is the one that was written,
//! but whoever can write the cache folder can write both: a truncated
//! object with a matching sidecar was mapped and its missing pages faulted
//! with SIGBUS, killing the process. A file that fails this check is not
//! an entry (it is rebuilt), so the loader never maps bytes that are not
//! there. It does not make a hostile object safe to run — nothing short of
//! not running it does — only a damaged one safe to refuse.

/// Whether `bytes` is an ELF64 little-endian object whose tables, segments
/// and sections all lie within `bytes`.
pub fn complete(bytes: &[u8]) -> bool {
    check(bytes).is_some()
}

fn check(b: &[u8]) -> Option<()> {
    if b.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let len = b.len() as u64;
    let u16_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        Some(u64::from(u16::from_le_bytes(
            b.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    let u32_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        Some(u64::from(u32::from_le_bytes(
            b.get(at..at + 4)?.try_into().ok()?,
        )))
    };
    let u64_at = |at: u64| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    };
    // A table of `count` entries of `size` bytes at `offset`, inside the
    // file: the offset of each entry.
    let table = |offset: u64, size: u64, count: u64| -> Option<Vec<u64>> {
        let end = offset.checked_add(size.checked_mul(count)?)?;
        (end <= len).then(|| (0..count).map(|k| offset + k * size).collect())
    };
    let within = |offset: u64, size: u64| offset.checked_add(size).is_some_and(|end| end <= len);
    let segments = table(u64_at(0x20)?, u16_at(0x36)?, u16_at(0x38)?)?;
    for ph in segments {
        if !within(u64_at(ph + 8)?, u64_at(ph + 32)?) {
            return None;
        }
    }
    let sections = table(u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?)?;
    // Sections of type NOBITS (`.bss`) take no room in the file.
    const NOBITS: u64 = 8;
    for sh in sections {
        if u32_at(sh + 4)? != NOBITS && !within(u64_at(sh + 0x18)?, u64_at(sh + 0x20)?) {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::complete;

    #[test]
    fn this_test_binary_is_complete_and_its_prefixes_are_not() {
        // The running test executable is an ELF64 file with segments and
        // sections throughout, as a shared object is.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(complete(&exe));
        for cut in [0, 5, 64, 4096, exe.len() / 2, exe.len() - 1] {
            assert!(!complete(&exe[..cut]), "a prefix of {cut} bytes");
        }
        let mut other = exe.clone();
        other[4] = 1;
        assert!(!complete(&other), "a 32-bit class");
    }
}
