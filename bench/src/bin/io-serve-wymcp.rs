//! One server of the public benchmark's I/O workload (issue 26 §1), wymcp,
//! as a program of its own: the benchmark builds each implementation
//! apart, so its code is laid out with nothing of the others' beside it
//! (BENCHMARKS.md, "One binary a server").

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) =
        wymcp_bench::io::servers::serve_one(&args, wymcp_bench::io::servers::serve_wymcp)
    {
        eprintln!("io-serve-wymcp: {e}");
        std::process::exit(2);
    }
}
