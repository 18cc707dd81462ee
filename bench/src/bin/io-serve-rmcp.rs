//! One server of the public benchmark's I/O workload (issue 26 §1), rmcp,
//! as a program of its own: the benchmark builds each implementation
//! apart, so its code is laid out with nothing of the others' beside it
//! (BENCHMARKS.md, "One binary a server").

fn main() {
    wymcp_bench::io::servers::main_one("io-serve-rmcp", wymcp_bench::io::servers::serve_rmcp);
}
