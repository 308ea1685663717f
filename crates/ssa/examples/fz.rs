fn main() {
    let path = std::env::args().nth(1).unwrap();
    let def = std::env::args().nth(2).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let m = ssa::Module::parse(&src).unwrap_or_else(|e| panic!("{}", e.render(&path, &src)));
    let args: Vec<ssa::Arg> = std::env::args()
        .skip(3)
        .map(|a| {
            if let Some(s) = a.strip_prefix("f32:") {
                ssa::Arg::Tensor {
                    dtype: ir::DType::F32,
                    shape: s.split('x').map(|d| d.parse().unwrap()).collect(),
                }
            } else if a == "float" {
                ssa::Arg::Float
            } else {
                ssa::Arg::Int(a.parse().unwrap())
            }
        })
        .collect();
    match ssa::functionalize(&m, &def, &args) {
        Ok(f) => {
            print!("{}", ir::print_program(&f.program));
            eprintln!("removed {:?}", f.removed);
        }
        Err(e) => eprintln!("{}", e.render(&path, &src)),
    }
}
