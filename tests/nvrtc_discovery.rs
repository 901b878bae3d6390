//! `scripts/find-nvrtc.sh` over fake directory layouts: where CUDA toolkits, pip wheels and the
//! device machine's image put NVRTC, which one wins, and the link that lets kvlab (which loads
//! `libnvrtc.so`, `.so.12`, …) use a CUDA 13 `libnvrtc.so.13`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/find-nvrtc.sh")
}

/// A fresh fake root holding empty files at `files` (relative paths).
fn layout(name: &str, files: &[&str]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("kvlab-nvrtc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for f in files {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"").unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    root
}

fn find(root: &Path, extra: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new("bash");
    c.arg(script()).args(args).env("KVLAB_NVRTC_ROOT", root).env_remove("KVLAB_NVRTC").env_remove("CUDA_HOME");
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().expect("bash runs")
}

fn found(root: &Path) -> String {
    let out = find(root, &[], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = String::from_utf8(out.stdout).unwrap().trim().to_string();
    path.strip_prefix(root.to_str().unwrap()).expect("under the fake root").to_string()
}

#[test]
fn the_device_images_cuda_13_toolkit_is_found_by_its_versioned_name() {
    // As on the H200 machine: only .so.13 names, beside builtins and the .alt variant.
    let root = layout(
        "toolkit13",
        &[
            "usr/local/cuda-13.0/lib64/libnvrtc.so.13.0.88",
            "usr/local/cuda-13.0/lib64/libnvrtc.so.13",
            "usr/local/cuda-13.0/lib64/libnvrtc.alt.so.13.0.88",
            "usr/local/cuda-13.0/lib64/libnvrtc-builtins.so.13.0.88",
        ],
    );
    assert_eq!(found(&root), "/usr/local/cuda-13.0/lib64/libnvrtc.so.13.0.88");
}

#[test]
fn pip_wheels_are_found_in_a_venv_for_cuda_13_and_12() {
    let cu13 = layout("wheel13", &["opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13"]);
    assert_eq!(found(&cu13), "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13");
    let cu12 = layout("wheel12", &["usr/local/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"]);
    assert_eq!(found(&cu12), "/usr/local/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
}

#[test]
fn a_toolkit_wins_over_a_wheel_and_the_newest_toolkit_over_older_ones() {
    let root = layout(
        "order",
        &[
            "opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
            "usr/local/cuda-12.4/lib64/libnvrtc.so.12",
            "usr/local/cuda-12.9/targets/x86_64-linux/lib/libnvrtc.so.12",
        ],
    );
    assert_eq!(found(&root), "/usr/local/cuda-12.9/targets/x86_64-linux/lib/libnvrtc.so.12");
    // Within one directory the highest version wins, the unversioned link last.
    let dir = layout("versions", &["usr/local/cuda/lib64/libnvrtc.so", "usr/local/cuda/lib64/libnvrtc.so.12"]);
    assert_eq!(found(&dir), "/usr/local/cuda/lib64/libnvrtc.so.12");
}

#[test]
fn kvlab_nvrtc_overrides_the_search_and_is_checked() {
    let root = layout("override", &["usr/local/cuda/lib64/libnvrtc.so.12", "elsewhere/libnvrtc.so.13"]);
    let chosen = root.join("elsewhere/libnvrtc.so.13");
    let out = find(&root, &[("KVLAB_NVRTC", chosen.to_str().unwrap())], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), chosen.to_str().unwrap());
    let dir = find(&root, &[("KVLAB_NVRTC", root.join("elsewhere").to_str().unwrap())], &[]);
    assert_eq!(String::from_utf8_lossy(&dir.stdout).trim(), chosen.to_str().unwrap());
    let bad = find(&root, &[("KVLAB_NVRTC", "/nonexistent/libnvrtc.so.99")], &[]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("KVLAB_NVRTC=/nonexistent"), "{bad:?}");
}

#[test]
fn nothing_found_is_an_error_that_says_where_it_looked() {
    let root =
        layout("empty", &["usr/local/cuda/lib64/libnvrtc-builtins.so.13.0", "usr/local/cuda/lib64/libnvrtc.alt.so.13"]);
    let out = find(&root, &[], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not found") && err.contains("nvidia-cuda-nvrtc") && err.contains("KVLAB_NVRTC"), "{err}");
}

#[test]
fn link_makes_a_cuda_13_library_loadable_under_the_unversioned_name() {
    let root = layout("link", &["usr/local/cuda-13.0/lib64/libnvrtc.so.13"]);
    let dir = root.join("links");
    let out = find(&root, &[], &["--link", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lib_dir = root.join("usr/local/cuda-13.0/lib64");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{}:{}", dir.display(), lib_dir.display()));
    assert_eq!(std::fs::read_link(dir.join("libnvrtc.so")).unwrap(), lib_dir.join("libnvrtc.so.13"));
}
