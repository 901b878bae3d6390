//! The GPU catalogue: memory as the driver reports it, memory bandwidth, dense 16-bit and FP8
//! tensor throughput, and the links, one entry per GPU with its source (`docs/MODELS.md` has the
//! table). Throughputs are dense (the datasheets' "with sparsity" figures halved).
//!
//! `total_memory_gib` is what `torch.cuda.mem_get_info` reports and vLLM's startup lines print
//! (`Free memory on device (…/T GiB)`): a card sold as 80 GB shows about 79.2 GiB. Where a startup
//! log gives it, that is the figure; otherwise (marked "est." in the comments) it is the memory
//! the driver lists for the card less the 0.4–0.6 GiB it keeps for itself, as on the logged
//! H100 (79.65 GiB listed, 79.19 reported) and RTX 4090 (23.99, 23.55).

use serde::Serialize;

/// The GPU figures the step-time and memory models use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    pub id: String,
    pub name: String,
    /// Memory as sold (GB on the box, in GiB units as the lab always counted it).
    pub memory_gib: f64,
    /// Memory as the driver reports it to PyTorch and vLLM, GiB.
    pub total_memory_gib: f64,
    pub mem_bandwidth_gb_s: f64,
    /// Dense BF16/FP16 tensor TFLOPs.
    pub peak_tflops: f64,
    /// Dense FP8 tensor TFLOPs (0 where the GPU has no FP8 tensor cores).
    pub fp8_tflops: f64,
    /// Host link used for swap (GB/s).
    pub pcie_gb_s: f64,
    /// GPU-to-GPU bandwidth per direction for tensor-parallel all-reduces (NVLink; PCIe on L4), GB/s.
    pub interconnect_gb_s: f64,
    /// The GPU-to-GPU link, in words.
    pub interconnect: String,
}

/// GPU ids the presets accept: the lab's first four, then the catalogue.
pub const GPU_IDS: &[&str] = &[
    "a100-80gb",
    "h100-sxm",
    "h200",
    "l4",
    "a10g",
    "l40s",
    "rtx-4090",
    "rtx-pro-6000",
    "a100-40gb",
    "a100-80gb-pcie",
    "h100-pcie",
    "h100-nvl",
    "h20",
    "b200",
    "mi300x",
];

/// (name, sold GiB, driver GiB, GB/s, BF16 TFLOPs, FP8 TFLOPs, host GB/s, link GB/s, link)
type Row = (&'static str, f64, f64, f64, f64, f64, f64, f64, &'static str);

fn row(id: &str) -> Option<Row> {
    Some(match id {
        // NVIDIA A100 datasheet (2021): 2,039 GB/s, 312 TF BF16; NVLink 600 GB/s both ways.
        // Driver total 79.15 GiB (vllm-project/vllm#2031's A100 80GB).
        "a100-80gb" => ("NVIDIA A100 80GB SXM", 80.0, 79.15, 2039.0, 312.0, 0.0, 25.0, 300.0, "NVLink 3"),
        // NVIDIA H100 datasheet: SXM 3.35 TB/s, 989 TF BF16, 1,979 TF FP8; NVLink 900 GB/s.
        // Driver total 79.22 GiB (vllm-project/vllm#10511; the llm-d-planner logs print 79.19).
        "h100-sxm" => ("NVIDIA H100 SXM", 80.0, 79.22, 3350.0, 989.0, 1979.0, 50.0, 450.0, "NVLink 4"),
        // NVIDIA H200 datasheet: 141 GB, 4.8 TB/s, 989 TF BF16, 1,979 TF FP8; NVLink 900 GB/s.
        "h200" => ("NVIDIA H200", 141.0, 139.81, 4800.0, 989.0, 1979.0, 50.0, 450.0, "NVLink 4"),
        // NVIDIA L4 datasheet: 24 GB, 300 GB/s, 121 TF BF16, 242.5 TF FP8; PCIe Gen4 only.
        "l4" => ("NVIDIA L4", 24.0, 22.05, 300.0, 121.0, 242.0, 25.0, 25.0, "PCIe Gen4"),
        // NVIDIA A10 datasheet (AWS publishes none for its A10G): 24 GB, 600 GB/s, 125 TF BF16.
        // Driver total est.
        "a10g" => ("NVIDIA A10G", 24.0, 22.07, 600.0, 125.0, 0.0, 25.0, 25.0, "PCIe Gen4"),
        // NVIDIA L40S datasheet: 48 GB, 864 GB/s, 362 TF BF16, 733 TF FP8. Driver total est.
        "l40s" => ("NVIDIA L40S", 48.0, 44.42, 864.0, 362.0, 733.0, 25.0, 25.0, "PCIe Gen4"),
        // NVIDIA Ada GPU architecture whitepaper (RTX 4090): 1,008 GB/s, 165 TF BF16 and 330 TF
        // FP8 with FP32 accumulation. Driver total 23.55 GiB (vllm-project/vllm#13061).
        "rtx-4090" => ("NVIDIA GeForce RTX 4090", 24.0, 23.55, 1008.0, 165.0, 330.0, 25.0, 25.0, "PCIe Gen4"),
        // NVIDIA RTX PRO 6000 Blackwell datasheet: 96 GB GDDR7, 1,792 GB/s, 4 PF FP4 with
        // sparsity (so 1 PF dense FP8, 0.5 PF BF16); PCIe Gen5. Driver total est.
        "rtx-pro-6000" => {
            ("NVIDIA RTX PRO 6000 Blackwell", 96.0, 94.97, 1792.0, 500.0, 1000.0, 50.0, 50.0, "PCIe Gen5")
        }
        // NVIDIA A100 datasheet: 40 GB SXM 1,555 GB/s. Driver total 39.38 GiB
        // (vllm-project/vllm#16570).
        "a100-40gb" => ("NVIDIA A100 40GB SXM", 40.0, 39.38, 1555.0, 312.0, 0.0, 25.0, 300.0, "NVLink 3"),
        // NVIDIA A100 datasheet: 80 GB PCIe 1,935 GB/s; NVLink bridge for two GPUs, 600 GB/s.
        "a100-80gb-pcie" => ("NVIDIA A100 80GB PCIe", 80.0, 79.15, 1935.0, 312.0, 0.0, 25.0, 300.0, "NVLink bridge"),
        // NVIDIA H100 datasheet: PCIe 80 GB 2 TB/s, 756 TF BF16, 1,513 TF FP8; NVLink bridge 600 GB/s.
        "h100-pcie" => ("NVIDIA H100 PCIe", 80.0, 79.19, 2000.0, 756.0, 1513.0, 50.0, 300.0, "NVLink bridge"),
        // NVIDIA H100 datasheet: NVL 94 GB 3.9 TB/s, 835 TF BF16, 1,671 TF FP8; NVLink bridge
        // 600 GB/s. Driver total est.
        "h100-nvl" => ("NVIDIA H100 NVL", 94.0, 93.1, 3900.0, 835.0, 1671.0, 50.0, 300.0, "NVLink bridge"),
        // NVIDIA H20 product brief: 96 GB HBM3, 4.0 TB/s, 148 TF BF16, 296 TF FP8; NVLink
        // 900 GB/s. Driver total est.
        "h20" => ("NVIDIA H20", 96.0, 94.99, 4000.0, 148.0, 296.0, 50.0, 450.0, "NVLink 4"),
        // NVIDIA DGX B200 / HGX B200 datasheet: 180 GB HBM3e per GPU, 8 TB/s, 2.25 PF BF16 and
        // 4.5 PF FP8 dense; NVLink 5 1.8 TB/s. Driver total est.
        "b200" => ("NVIDIA B200", 180.0, 178.36, 8000.0, 2250.0, 4500.0, 50.0, 900.0, "NVLink 5"),
        // AMD Instinct MI300X datasheet: 192 GB HBM3, 5.3 TB/s, 1,307 TF BF16, 2,615 TF FP8;
        // Infinity Fabric 896 GB/s aggregate both ways. ROCm reports the whole 192 GiB less a
        // little (est.).
        "mi300x" => ("AMD Instinct MI300X", 192.0, 191.98, 5300.0, 1307.0, 2615.0, 50.0, 448.0, "Infinity Fabric"),
        _ => return None,
    })
}

pub fn gpu_preset(id: &str) -> Option<GpuSpec> {
    let (name, memory_gib, total, bw, tflops, fp8, pcie, link, link_name) = row(id)?;
    Some(GpuSpec {
        id: id.to_string(),
        name: name.to_string(),
        memory_gib,
        total_memory_gib: total,
        mem_bandwidth_gb_s: bw,
        peak_tflops: tflops,
        fp8_tflops: fp8,
        pcie_gb_s: pcie,
        interconnect_gb_s: link,
        interconnect: link_name.to_string(),
    })
}
