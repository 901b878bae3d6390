//! The config.json's keys as the reader walks them: `Obj`, one JSON object and its path in the
//! file, whose typed getters refuse a malformed key by name, and the architecture families
//! (`Family`) whose keys the reader tells apart.

use serde_json::{Map, Value};

use crate::engine::config::ConfigError;

/// The architectures by the family whose keys they use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Dense,
    Mistral,
    Qwen,
    Gemma,
    Gemma2,
    Gemma3,
    Mixtral,
    QwenMoe,
    Llama4,
    GptOss,
    DeepSeek,
    Phi,
    Phi3,
    Cohere,
    Olmo2,
    InternLm2,
    Starcoder2,
    Falcon,
}

pub(super) fn family(arch: &str) -> Option<Family> {
    Some(match arch {
        "LlamaForCausalLM" | "GraniteForCausalLM" => Family::Dense,
        "MistralForCausalLM" => Family::Mistral,
        "Qwen2ForCausalLM" | "Qwen3ForCausalLM" => Family::Qwen,
        "GemmaForCausalLM" => Family::Gemma,
        "Gemma2ForCausalLM" => Family::Gemma2,
        "Gemma3ForCausalLM" | "Gemma3ForConditionalGeneration" => Family::Gemma3,
        "MixtralForCausalLM" => Family::Mixtral,
        "Qwen2MoeForCausalLM" | "Qwen3MoeForCausalLM" => Family::QwenMoe,
        "Llama4ForCausalLM" | "Llama4ForConditionalGeneration" => Family::Llama4,
        "GptOssForCausalLM" => Family::GptOss,
        "DeepseekV2ForCausalLM" | "DeepseekV3ForCausalLM" => Family::DeepSeek,
        "PhiForCausalLM" => Family::Phi,
        "Phi3ForCausalLM" => Family::Phi3,
        "CohereForCausalLM" => Family::Cohere,
        "Olmo2ForCausalLM" => Family::Olmo2,
        "InternLM2ForCausalLM" => Family::InternLm2,
        "Starcoder2ForCausalLM" => Family::Starcoder2,
        "FalconForCausalLM" => Family::Falcon,
        _ => return None,
    })
}

/// One JSON object of the file and its path in it (`""` or `"text_config."`).
#[derive(Clone, Copy)]
pub(super) struct Obj<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) at: &'a str,
}

pub(super) fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::new(key, message)
}

impl<'a> Obj<'a> {
    pub(super) fn path(&self, key: &str) -> String {
        format!("{}{key}", self.at)
    }

    /// A key that is absent or `null` reads as None.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn u32(&self, key: &str) -> Result<Option<u32>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().filter(|&n| n <= u64::from(u32::MAX)).map(|n| Some(n as u32)).ok_or_else(|| {
                err(self.path(key), format!("{v} is not a whole number; config.json gives it as one, e.g. 32"))
            }),
        }
    }

    pub(super) fn req(&self, key: &str) -> Result<u32, ConfigError> {
        self.u32(key)?.ok_or_else(|| {
            err(self.path(key), "missing; copy the model's whole config.json from its Hugging Face page".to_string())
        })
    }

    pub(super) fn positive(&self, key: &str) -> Result<u32, ConfigError> {
        match self.req(key)? {
            0 => Err(err(self.path(key), "is 0; it must be at least 1")),
            n => Ok(n),
        }
    }

    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| err(self.path(key), format!("{v} is not true or false"))),
        }
    }

    pub(super) fn str(&self, key: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| err(self.path(key), format!("{v} is not a string"))),
        }
    }

    pub(super) fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_array().map(Some).ok_or_else(|| err(self.path(key), format!("{v} is not a list"))),
        }
    }

    pub(super) fn object(&self, key: &str) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_object().map(Some).ok_or_else(|| err(self.path(key), "is not an object")),
        }
    }
}
