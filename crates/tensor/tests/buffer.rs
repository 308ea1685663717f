//! Buffers, the memory of tensors and of the slots compiled steps run on:
//! zeroed, aligned to a cache line, and, when large, backed by transparent
//! huge pages where the system grants them on request (so that random reads
//! of a large table do not miss the TLB on nearly every access).

use tensor::Buffer;

#[test]
fn buffers_are_zeroed_and_aligned() {
    for bytes in [1, 63, 64, 65, 4096, 5 << 20] {
        let slot = Buffer::zeroed(bytes);
        assert!(slot.bytes() >= bytes && slot.bytes() < bytes + 64);
        let all = slot.view::<u8>(slot.bytes()).unwrap();
        assert_eq!(all.as_ptr() as usize % 64, 0, "{bytes} bytes: not aligned");
        assert!(all.iter().all(|&b| b == 0), "{bytes} bytes: not zeroed");
    }
}

/// The transparent huge page mode, the bracketed word of
/// `/sys/kernel/mm/transparent_hugepage/enabled` (`always`, `madvise` or
/// `never`), if the system has that file.
fn huge_page_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')?;
    let end = text[start..].find(']')?;
    Some(text[start + 1..start + end].to_string())
}

/// The kilobytes of huge pages backing the mapping of this process that
/// contains `address`, from `/proc/self/smaps`.
fn huge_kb_at(address: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = lo <= address && address < hi;
                continue;
            }
        }
        if inside {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
    }
    None
}

#[test]
fn large_buffers_get_huge_pages_where_the_system_grants_them() {
    let Some(mode) = huge_page_mode() else {
        eprintln!("no transparent huge pages on this system; nothing to check");
        return;
    };
    if mode == "never" {
        eprintln!("transparent huge pages are off (`never`); nothing to check");
        return;
    }
    let slot = Buffer::zeroed(64 << 20);
    let start = slot.view::<u8>(1).unwrap().as_ptr() as usize;
    let huge = huge_kb_at(start + (32 << 20)).expect("the buffer's mapping in /proc/self/smaps");
    // At least half of the 64 MiB: the unaligned ends of the allocation
    // keep small pages, and the kernel may decline a few huge ones.
    assert!(
        huge >= 32 << 10,
        "a 64 MiB buffer has only {huge} kB of huge pages (mode `{mode}`)"
    );
}
