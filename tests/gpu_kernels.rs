//! The CUDA calibration kernels compile, through the same NVRTC path `kvlab calibrate --device
//! cuda` uses, to cubins for the A100 (sm_80) and H100/H200 (sm_90) without a register spill. No
//! GPU is needed: NVRTC alone compiles (scripts/test.sh finds the pip wheel's NVRTC with
//! scripts/find-nvrtc.sh and runs this file with `--features gpu`).
#![cfg(feature = "gpu")]

use kvlab::calibrate::cuda::nvrtc::{compile, version, KERNEL_NAMES};

#[test]
fn kernels_compile_to_cubins_for_sm80_and_sm90_without_spills() {
    let (major, minor) = version().unwrap_or_else(|e| panic!("{e}"));
    assert!(major >= 12, "NVRTC {major}.{minor} is older than any CUDA the calibration targets");
    for arch in ["sm_80", "sm_90"] {
        let c = compile(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(c.is_cubin && c.image.starts_with(b"\x7fELF"), "{arch}: not a cubin");
        for name in KERNEL_NAMES {
            let k = c.kernels.iter().find(|k| k.name == *name);
            let k = k.unwrap_or_else(|| panic!("{arch}: ptxas said nothing of {name}:\n{}", c.log));
            assert!(k.registers > 0 && k.registers <= 64, "{arch}: {name} uses {} registers", k.registers);
        }
        assert!(c.spills().is_empty(), "{arch}: kernels spill registers: {:?}\n{}", c.spills(), c.log);
    }
}

#[test]
fn ptx_fallback_compiles_too() {
    let c = compile("compute_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(!c.is_cubin);
    let text = String::from_utf8_lossy(&c.image);
    for name in KERNEL_NAMES {
        assert!(text.contains(&format!(".entry {name}(")), "{name} missing from the PTX");
    }
}

#[test]
fn compile_errors_carry_the_nvrtc_log() {
    let e = compile("sm_1").unwrap_err();
    assert!(e.contains("sm_1"), "{e}");
}
