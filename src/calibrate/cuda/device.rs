//! The CUDA device (`gpu` feature): opening it, loading the kernels (cubin first, PTX as a
//! fallback, both errors kept), the warm-up and the reference bandwidths (device-to-device copy,
//! streaming read), and a block pool of a given geometry on it (pool.rs).

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};
use cudarc::nvrtc::Ptx;

use super::info::{DeviceBandwidths, DeviceInfo};
use super::nvrtc;
use crate::calibrate::backend::PoolGeometry;
use crate::calibrate::cuda::pool::CudaPool;
use crate::calibrate::cuda::timer::{err, Kernels, Timer};

pub struct Device {
    pub info: DeviceInfo,
    ctx: Arc<CudaContext>,
    kernels: Kernels,
    timer: Timer,
}

/// The loaded kernels, how they were built (`sm_90 cubin`, …) and ptxas's registers per kernel.
type Loaded = (Kernels, String, Vec<(String, u32)>);

/// Loads the kernels: a cubin for the device's architecture, else PTX for the driver to JIT.
fn load_kernels(ctx: &Arc<CudaContext>, (major, minor): (i32, i32)) -> Result<Loaded, String> {
    let sm = format!("sm_{major}{minor}");
    let cubin = nvrtc::compile(&sm).and_then(|c| {
        let module = ctx.load_module(Ptx::from_binary(c.image.clone())).map_err(err("loading the cubin"))?;
        let regs = c.kernels.iter().map(|k| (k.name.clone(), k.registers)).collect();
        Ok((module, format!("{sm} cubin"), regs))
    });
    let (module, how, regs) = match cubin {
        Ok(m) => m,
        Err(cubin_error) => {
            let compute = format!("compute_{major}{minor}");
            let ptx = nvrtc::compile(&compute).and_then(|c| {
                let text = String::from_utf8_lossy(&c.image).trim_end_matches('\0').to_string();
                ctx.load_module(Ptx::from_src(text)).map_err(err("loading the PTX (JIT)"))
            });
            match ptx {
                Ok(m) => (m, format!("{compute} PTX (JIT; the {sm} cubin failed: {cubin_error})"), Vec::new()),
                Err(ptx_error) => {
                    return Err(format!(
                        "the calibration kernels could not be loaded.\n  as a {sm} cubin: {cubin_error}\n  as {compute} PTX: {ptx_error}"
                    ))
                }
            }
        }
    };
    let f = |n: &str| module.load_function(n).map_err(|e| format!("CUDA: kernel {n}: {e:?}"));
    let kernels = Kernels {
        kv_write: f("kv_write")?,
        gather_paged: f("gather_paged")?,
        gather_contiguous: f("gather_contiguous")?,
        stage_contiguous: f("stage_contiguous")?,
        read_stream: f("read_stream")?,
    };
    Ok((kernels, how, regs))
}

impl Device {
    pub fn open(ordinal: usize) -> Result<Device, String> {
        // SAFETY: only probes whether the driver library can be loaded.
        if !unsafe { sys::is_culib_present() } {
            return Err("no CUDA driver found (libcuda could not be loaded); run on a machine with an NVIDIA GPU and its driver".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| {
            format!("the CUDA driver is installed but device {ordinal} cannot be opened ({e:?}); check nvidia-smi")
        })?;
        // One stream only: cudarc's cross-stream event tracking would add work inside timings.
        // SAFETY: every allocation and launch of this program uses the default stream.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().map_err(err("reading the device name"))?;
        let nvrtc_version = nvrtc::version().map_err(|e| format!("found {name}, but {e}"))?;
        let cc = ctx.compute_capability().map_err(err("reading the compute capability"))?;
        let attr = |a| ctx.attribute(a).map_err(err("reading a device attribute"));
        let sms = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        let l2_bytes = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u64;
        let (kernels, how, registers) = load_kernels(&ctx, cc)?;
        let timer = Timer::new(&ctx, kernels.read_stream.clone(), sms, l2_bytes)?;
        Ok(Device {
            info: DeviceInfo {
                name,
                compute_capability: cc,
                multiprocessors: sms,
                l2_bytes,
                nvrtc_version,
                kernels: how,
                registers,
            },
            ctx,
            kernels,
            timer,
        })
    }

    pub fn warm_up(&mut self, ms: f64) -> Result<f64, String> {
        self.timer.warm(ms)
    }

    pub fn bandwidths(&mut self, bytes: u64) -> Result<DeviceBandwidths, String> {
        let n = (bytes / 16 * 16).max(16) as usize;
        let src = self.timer.stream.alloc_zeros::<u8>(n).map_err(err("allocating the copy source"))?;
        let mut dst = self.timer.stream.alloc_zeros::<u8>(n).map_err(err("allocating the copy target"))?;
        let (mut copy, mut read) = (Vec::new(), Vec::new());
        for _ in 0..6 {
            let src_ref = &src;
            let dst_ref = &mut dst;
            let (_, ns) =
                self.timer.timed(true, |stream, _| stream.memcpy_dtod(src_ref, dst_ref).map_err(err("copying")))?;
            copy.push(ns);
            read.push(self.timer.stream_read(Some(&src))?.1);
        }
        // The first of each is a warm-up.
        let median = |v: &mut Vec<u64>| {
            v.remove(0);
            v.sort_unstable();
            v[v.len() / 2].max(1) as f64
        };
        Ok(DeviceBandwidths {
            copy_gb_s: 2.0 * n as f64 / median(&mut copy),
            stream_read_gb_s: n as f64 / median(&mut read),
            bytes: n as u64,
        })
    }

    pub fn pool(&self, geometry: PoolGeometry) -> Result<CudaPool, String> {
        geometry.validate()?;
        if !geometry.block_size.is_power_of_two()
            || !geometry.plane_bytes.is_power_of_two()
            || geometry.plane_bytes < 16
        {
            return Err(format!(
                "the CUDA pool needs power-of-two block sizes and planes of 16 bytes or more (got block size {}, {} bytes per plane)",
                geometry.block_size, geometry.plane_bytes
            ));
        }
        let words = (geometry.pool_bytes() / 8) as usize;
        let pool = self.timer.stream.alloc_zeros::<u64>(words).map_err(err("allocating the pool"))?;
        let timer =
            Timer::new(&self.ctx, self.kernels.read_stream.clone(), self.info.multiprocessors, self.info.l2_bytes)?;
        Ok(CudaPool::new(geometry, self.info.name.clone(), self.kernels.clone(), timer, pool))
    }
}
