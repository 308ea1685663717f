//! The target machine as data: what passes need to know about the CPU.

/// One cache level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub level: u32,
    pub size_bytes: u64,
    pub line_bytes: u64,
    /// How many cores share it.
    pub shared_by: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub cores: u32,
    /// The widest vector registers, in bits (512 with AVX-512).
    pub vector_bits: u32,
    /// Instruction-set extensions (`avx2`, `avx512f`, `fma`, ...).
    pub isa: Vec<String>,
    /// Data caches, innermost first.
    pub caches: Vec<Cache>,
}

impl Target {
    /// A small generic target for tests: 2 cores, 256-bit vectors, 32 KiB
    /// L1 and 1 MiB L2 with 64-byte lines.
    pub fn generic() -> Target {
        Target {
            name: "generic".to_string(),
            cores: 2,
            vector_bits: 256,
            isa: vec!["avx2".to_string(), "fma".to_string()],
            caches: vec![
                Cache {
                    level: 1,
                    size_bytes: 32 << 10,
                    line_bytes: 64,
                    shared_by: 1,
                },
                Cache {
                    level: 2,
                    size_bytes: 1 << 20,
                    line_bytes: 64,
                    shared_by: 1,
                },
            ],
        }
    }
}
