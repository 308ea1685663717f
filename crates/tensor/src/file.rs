//! Opening the files a user names (models, weights, `.npy` inputs, TC
//! sources, pipelines, targets): only regular files, so that a FIFO cannot
//! hang a read and a device such as `/dev/zero` cannot feed one without
//! end; and text files no longer than a limit, checked before reading.
//!
//! A symbolic link is followed (a model's folder may link its weights);
//! where a file must stay inside a folder, the caller checks the real path.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The longest text file tessera reads (sources, pipelines, targets).
pub const TEXT_LIMIT: u64 = 64 << 20;

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// Opens the regular file at `path`, with its length in bytes.
///
/// The path is examined before it is opened (opening a FIFO for reading
/// would wait for a writer), and the opened file again (in case the path
/// was replaced in between).
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok((file, meta.len()))
}

/// The bytes of the regular file at `path`, refused if it holds more than
/// `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, len) = open_regular(path)?;
    if len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the file has {len} bytes, more than the {limit} tessera reads"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // A file that grows while it is read stops at the limit all the same.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the file has more than the {limit} bytes tessera reads"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_open() {
        let dir = std::env::temp_dir().join(format!("tessera-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        std::fs::write(&f, b"hello").unwrap();
        assert_eq!(read_limited(&f, 5).unwrap(), b"hello");
        let long = read_limited(&f, 4).unwrap_err().to_string();
        assert!(long.contains("5 bytes, more than the 4"), "{long}");
        for special in [Path::new("/dev/zero"), dir.as_path()] {
            let e = open_regular(special).unwrap_err().to_string();
            assert_eq!(e, "not a regular file", "{}", special.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
