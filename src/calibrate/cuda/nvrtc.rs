//! Compiling the calibration kernels (`kernels.cu`) with NVRTC, no GPU needed: to a cubin for one
//! architecture (`sm_90` for H100/H200), which the driver loads without a JIT, or to PTX as a
//! fallback. ptxas runs verbose, so every kernel's registers and spills are read from the log
//! (`parse_ptxas_log`): `tests/gpu_kernels.rs` compiles for sm_80 and sm_90 and fails on a spill.
//!
//! NVRTC is loaded at run time by cudarc under the name `libnvrtc.so` (or `.so.12`, `.11`, …);
//! `scripts/find-nvrtc.sh` finds the library where a machine ships it (CUDA 13 installs
//! `libnvrtc.so.13` only) and links it under that name.

/// The kernels' source.
pub const KERNELS: &str = include_str!("kernels.cu");

/// Every kernel in `KERNELS`, as the calibration loads them.
pub const KERNEL_NAMES: &[&str] = &["kv_write", "gather_paged", "gather_contiguous", "stage_contiguous", "read_stream"];

/// What ptxas said about one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelUsage {
    pub name: String,
    pub registers: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub stack_bytes: u32,
}

/// Reads ptxas's verbose report (`-v`) out of an NVRTC log: per kernel, its stack frame, spills
/// and registers.
pub fn parse_ptxas_log(log: &str) -> Vec<KernelUsage> {
    fn number_before(line: &str, unit: &str) -> Option<u32> {
        let at = line.find(unit)?;
        line[..at].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty())?.parse().ok()
    }
    let mut out: Vec<KernelUsage> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            out.push(KernelUsage { name: rest.trim().to_string(), ..KernelUsage::default() });
        } else if let Some(k) = out.last_mut() {
            if line.contains("bytes spill stores") {
                k.stack_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
                k.spill_store_bytes = number_before(line, "bytes spill stores").unwrap_or(0);
                k.spill_load_bytes = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains(" registers") {
                k.registers = number_before(line, " registers").unwrap_or(0);
            }
        }
    }
    out
}

/// A compiled module image.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// `sm_90` (a cubin) or `compute_90` (PTX).
    pub arch: String,
    /// The cubin, or the PTX text with its terminating NUL.
    pub image: Vec<u8>,
    pub is_cubin: bool,
    pub log: String,
    pub kernels: Vec<KernelUsage>,
}

impl Compiled {
    /// Kernels that spill registers to local memory (a slow gather would measure the spill).
    pub fn spills(&self) -> Vec<&KernelUsage> {
        self.kernels.iter().filter(|k| k.spill_store_bytes > 0 || k.spill_load_bytes > 0).collect()
    }
}

/// The loaded NVRTC's version, or why it cannot be loaded.
#[cfg(feature = "gpu")]
pub fn version() -> Result<(i32, i32), String> {
    use cudarc::nvrtc::sys;
    // SAFETY: only probes whether the library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        return Err(NOT_FOUND.to_string());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }.result().map_err(|e| format!("nvrtcVersion: {e:?}"))?;
    Ok((major, minor))
}

/// The message when NVRTC cannot be loaded.
pub const NOT_FOUND: &str = "NVRTC (libnvrtc.so), which compiles the calibration kernels, could not be loaded; run scripts/find-nvrtc.sh (or scripts/calibrate-gpu.sh, which uses it) to find it and put it on LD_LIBRARY_PATH";

/// Compiles `KERNELS` for `arch`: `sm_XY` gives a cubin, `compute_XY` PTX. The error carries
/// NVRTC's log.
#[cfg(feature = "gpu")]
pub fn compile(arch: &str) -> Result<Compiled, String> {
    use std::ffi::{CStr, CString};

    use cudarc::nvrtc::{result, sys};

    version()?;
    let is_cubin = arch.starts_with("sm_");
    let src = CString::new(KERNELS).expect("no NUL in the kernels");
    let name = CString::new("kvlab_kernels.cu").expect("no NUL");
    let prog = result::create_program(&src, Some(&name)).map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    let mut options = vec![format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    if is_cubin {
        options.push("--ptxas-options=-v".to_string());
    }
    // SAFETY: `prog` is a live program; the options are valid C strings.
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above; the log is NUL-terminated.
    let log = unsafe { result::get_program_log(prog) }
        .map(|raw| unsafe { CStr::from_ptr(raw.as_ptr()) }.to_string_lossy().into_owned())
        .unwrap_or_default();
    let image = compiled.map_err(|e| format!("{e:?}")).and_then(|()| {
        if is_cubin {
            let mut size = 0usize;
            // SAFETY: `prog` compiled; `size` is a valid out-pointer.
            unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }.result().map_err(|e| format!("{e:?}"))?;
            let mut image = vec![0u8; size];
            // SAFETY: `image` holds `size` bytes, as NVRTC asked.
            unsafe { sys::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast()) }.result().map_err(|e| format!("{e:?}"))?;
            Ok(image)
        } else {
            // SAFETY: `prog` compiled.
            let ptx = unsafe { result::get_ptx(prog) }.map_err(|e| format!("{e:?}"))?;
            Ok(ptx.into_iter().map(|c| c as u8).collect())
        }
    });
    // SAFETY: `prog` is not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    let image = image.map_err(|e| format!("NVRTC could not compile the kernels for {arch}: {e}\n{log}"))?;
    Ok(Compiled { arch: arch.to_string(), kernels: parse_ptxas_log(&log), image, is_cubin, log })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_reports_are_read_per_kernel() {
        let log = "ptxas info    : 0 bytes gmem\n\
            ptxas info    : Compiling entry function 'gather_paged' for 'sm_90'\n\
            ptxas info    : Function properties for gather_paged\n\
            \x20   8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n\
            ptxas info    : Used 40 registers, used 0 barriers, 392 bytes cmem[0]\n\
            ptxas info    : Function properties for kv_write\n\
            \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
            ptxas info    : Used 22 registers, used 0 barriers, 380 bytes cmem[0]\n";
        let k = parse_ptxas_log(log);
        assert_eq!(k.len(), 2);
        assert_eq!(
            k[0],
            KernelUsage {
                name: "gather_paged".into(),
                registers: 40,
                spill_store_bytes: 12,
                spill_load_bytes: 16,
                stack_bytes: 8
            }
        );
        assert_eq!((k[1].name.as_str(), k[1].registers, k[1].spill_store_bytes), ("kv_write", 22, 0));
        let c = Compiled { arch: "sm_90".into(), image: vec![], is_cubin: true, log: log.into(), kernels: k };
        assert_eq!(c.spills().len(), 1);
    }

    #[test]
    fn every_kernel_named_is_defined() {
        for name in KERNEL_NAMES {
            assert!(KERNELS.contains(&format!("extern \"C\" __global__ void {name}(")), "{name}");
        }
    }
}
