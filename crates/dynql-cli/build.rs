//! Links the `dynql` executable at a fixed address (not position-independent) on Linux with
//! the GNU toolchain, as the DuckDB CLI is: a position-independent executable has its dynamic
//! loader apply about 245,000 relocations at every start (5.9 MB of relocation entries read,
//! 4 MB of `.data.rel.ro` copied page by page), which was more than half of the page faults
//! of a short command and about 10 MB of its peak memory. The code itself is unchanged (it
//! is compiled position-independent either way); only the executable's load address is fixed,
//! which gives up address randomisation of the executable's own image.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
