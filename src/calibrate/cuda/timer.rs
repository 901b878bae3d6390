//! What every CUDA timing needs (`gpu` feature): the loaded kernels, the launch constants, and
//! the `Timer` (a stream, two events, an L2-sized flush buffer, checksum slots) that times a
//! launch with a cold L2, plus the warm-up and the streaming-read reference.

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};

/// Threads per block of the gathers (4 warps).
pub(crate) const GATHER_THREADS: u32 = 128;
pub(crate) const THREADS: u32 = 256;
/// Bytes of one plane each thread block of a gather reads (a chunk of whole blocks, at least one
/// per warp).
pub(crate) const CHUNK_BYTES: u32 = 32 << 10;
pub(crate) const OUT_SLOTS: usize = 1024;

pub(crate) fn err(what: &str) -> impl Fn(DriverError) -> String + '_ {
    move |e| format!("CUDA: {what} failed: {e:?}")
}

#[derive(Clone)]
pub(crate) struct Kernels {
    pub(crate) kv_write: CudaFunction,
    pub(crate) gather_paged: CudaFunction,
    pub(crate) gather_contiguous: CudaFunction,
    pub(crate) stage_contiguous: CudaFunction,
    pub(crate) read_stream: CudaFunction,
}

/// Device state every timing needs: the stream, two events, a buffer larger than L2 to flush it,
/// the checksum slots.
pub(crate) struct Timer {
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) start: CudaEvent,
    pub(crate) stop: CudaEvent,
    /// Taken out only while the warm-up streams it.
    pub(crate) flush: Option<CudaSlice<u8>>,
    pub(crate) out: CudaSlice<u64>,
    pub(crate) read_stream: CudaFunction,
    pub(crate) sms: u32,
}

impl Timer {
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        read_stream: CudaFunction,
        sms: u32,
        l2_bytes: u64,
    ) -> Result<Timer, String> {
        let stream = ctx.default_stream();
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let flush_bytes = (4 * l2_bytes).max(256 << 20) as usize;
        Ok(Timer {
            start: ctx.new_event(flags).map_err(err("creating an event"))?,
            stop: ctx.new_event(flags).map_err(err("creating an event"))?,
            flush: Some(stream.alloc_zeros::<u8>(flush_bytes).map_err(err("allocating the L2 flush buffer"))?),
            out: stream.alloc_zeros::<u64>(OUT_SLOTS).map_err(err("allocating the checksum slots"))?,
            stream,
            read_stream,
            sms,
        })
    }

    /// Overwrites the flush buffer when `cold` (evicting everything from L2; the device is busy
    /// with it while the host enqueues what follows, so the launch is not timed), then times
    /// `launch` alone between two events. Returns the checksum slots' sum and the device ns.
    pub(crate) fn timed(
        &mut self,
        cold: bool,
        launch: impl FnOnce(&Arc<CudaStream>, &mut CudaSlice<u64>) -> Result<(), String>,
    ) -> Result<(u64, u64), String> {
        self.stream.memset_zeros(&mut self.out).map_err(err("clearing checksums"))?;
        if let Some(flush) = self.flush.as_mut().filter(|_| cold) {
            self.stream.memset_zeros(flush).map_err(err("flushing L2"))?;
        }
        self.start.record(&self.stream).map_err(err("recording an event"))?;
        launch(&self.stream, &mut self.out)?;
        self.stop.record(&self.stream).map_err(err("recording an event"))?;
        self.stop.synchronize().map_err(err("waiting for a kernel"))?;
        let ms = self.start.elapsed_ms(&self.stop).map_err(err("reading an event"))?;
        let slots = self.stream.clone_dtoh(&self.out).map_err(err("reading checksums"))?;
        Ok((slots.iter().fold(0u64, |a, &x| a.wrapping_add(x)), (f64::from(ms) * 1e6) as u64))
    }

    /// One streaming read of `bytes` bytes at `data` (whole 16-byte vectors), timed from a cold L2
    /// (or, with `data` None, of the flush buffer itself, warm: the warm-up).
    pub(crate) fn stream_read<T: cudarc::driver::DeviceRepr>(
        &mut self,
        data: Option<&CudaSlice<T>>,
    ) -> Result<(u64, u64), String> {
        let cfg = LaunchConfig { grid_dim: (self.sms * 8, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
        let f = self.read_stream.clone();
        match data {
            Some(d) => {
                let vecs = (d.num_bytes() / 16) as u64;
                self.timed(true, |stream, out| {
                    let mut l = stream.launch_builder(&f);
                    l.arg(d).arg(&vecs).arg(out);
                    // SAFETY: arguments match read_stream; `vecs` 16-byte vectors lie inside `d`.
                    unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching read_stream"))
                })
            }
            None => {
                let flush = self.flush.take().expect("the flush buffer is only taken here");
                let vecs = (flush.len() / 16) as u64;
                let r = self.timed(false, |stream, out| {
                    let mut l = stream.launch_builder(&f);
                    l.arg(&flush).arg(&vecs).arg(out);
                    // SAFETY: as above, over the flush buffer.
                    unsafe { l.launch(cfg) }.map(|_| ()).map_err(err("launching read_stream"))
                });
                self.flush = Some(flush);
                r
            }
        }
    }

    /// Streams the flush buffer until `ms` of device time has passed (at most 2,000 reads).
    pub(crate) fn warm(&mut self, ms: f64) -> Result<f64, String> {
        let mut spent = 0.0;
        for _ in 0..2000 {
            if spent >= ms {
                break;
            }
            spent += self.stream_read::<u8>(None)?.1 as f64 / 1e6;
        }
        Ok(spent)
    }
}
