//! Capacity planning: how many sequences each allocation policy lets one KV budget hold,
//! computed the way the reference article's worked example (Belgavi's Book Store) does.

use serde::Serialize;

use super::model::{capacity_tokens, KvDtype, ModelSpec};

#[derive(Clone, Debug)]
pub struct PlanInput {
    pub model: ModelSpec,
    pub kv_dtype: KvDtype,
    pub kv_bytes: u64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub max_tokens: u32,
    pub max_model_len: u32,
    pub block_size: u32,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MaxSeqs {
    pub contiguous_prompt_plus_max_tokens: u64,
    pub contiguous_max_model_len: u64,
    pub paged: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CapacityPlan {
    pub model: String,
    pub kv_dtype: &'static str,
    pub kv_bytes_per_token: u64,
    pub capacity_tokens: u64,
    pub num_blocks: u64,
    pub block_size: u32,
    pub max_model_len: u32,
    /// capacity (whole blocks) / max_model_len, as vLLM prints it at startup.
    pub max_concurrency: f64,
    /// Tokens a paged sequence holds on average: prompt + half the mean output + half a block.
    pub paged_tokens_per_seq: f64,
    pub max_seqs: MaxSeqs,
}

impl CapacityPlan {
    pub fn compute(input: &PlanInput) -> CapacityPlan {
        let kv_bytes_per_token = input.model.kv_bytes_per_token(input.kv_dtype);
        let capacity = capacity_tokens(input.kv_bytes, kv_bytes_per_token);
        let block = u64::from(input.block_size.max(1));
        let num_blocks = capacity / block;
        let paged_capacity = num_blocks * block;
        let reserve_prompt_max = u64::from(input.prompt_tokens + input.max_tokens).min(u64::from(input.max_model_len));
        let paged_tokens_per_seq =
            f64::from(input.prompt_tokens) + f64::from(input.output_tokens) / 2.0 + f64::from(input.block_size) / 2.0;
        CapacityPlan {
            model: input.model.id.clone(),
            kv_dtype: input.kv_dtype.name(),
            kv_bytes_per_token,
            capacity_tokens: capacity,
            num_blocks,
            block_size: input.block_size,
            max_model_len: input.max_model_len,
            max_concurrency: paged_capacity as f64 / f64::from(input.max_model_len),
            paged_tokens_per_seq,
            max_seqs: MaxSeqs {
                contiguous_prompt_plus_max_tokens: capacity / reserve_prompt_max.max(1),
                contiguous_max_model_len: capacity / u64::from(input.max_model_len.max(1)),
                paged: (paged_capacity as f64 / paged_tokens_per_seq) as u64,
            },
        }
    }

    /// The line vLLM logs at startup.
    pub fn startup_line(&self) -> String {
        startup_line(self.num_blocks * u64::from(self.block_size), self.max_model_len)
    }
}

/// "GPU KV cache size: N tokens, Maximum concurrency for L tokens per request: X.XXx"
pub fn startup_line(capacity_tokens: u64, max_model_len: u32) -> String {
    format!(
        "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: {:.2}x",
        group_thousands(capacity_tokens),
        group_thousands(u64::from(max_model_len)),
        capacity_tokens as f64 / f64::from(max_model_len.max(1))
    )
}

/// 196608 → "196,608", as vLLM prints it.
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
