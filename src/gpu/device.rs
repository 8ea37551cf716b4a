//! OpenCL device discovery and selection.
//!
//! Every OpenCL GPU of every platform is a candidate; CPU devices (PoCL, as CI uses) are included
//! only when asked for, by [`Selection::include_cpu`] or `PREEMPTIBLE_GROTH16_OPENCL_CPU=1`.
//! `PREEMPTIBLE_GROTH16_GPUS` restricts the set to a comma-separated list of device ids or name
//! fragments. The environment is read once, in [`Selection::from_env`].
//!
//! A device's id is stable across processes and reboots where the platform tells the PCI
//! address (`pci-0000:17:00.0`, from `cl_khr_pci_bus_info` or NVIDIA's and AMD's own queries);
//! otherwise it is the platform and device names with the device's index among equals. Each
//! device also carries the id bellperson 0.27 names it by ([`Device::bellperson_id`]), the name
//! of bellperson's per-device lock file (`gpu/locks/bellperson.rs`).

use super::error::GpuError;
use ocl::core::{DeviceInfo, DeviceInfoResult, DeviceType, PlatformInfo};
use std::sync::Mutex;

pub use crate::config::CPU_ENV;
pub use crate::config::DEVICES_ENV;

/// `cl_khr_pci_bus_info`: `CL_DEVICE_PCI_BUS_INFO_KHR`, four `cl_uint`: domain, bus, device,
/// function.
const PCI_BUS_INFO_KHR: u32 = 0x410F;
/// `cl_nv_device_attribute_query`: `CL_DEVICE_PCI_BUS_ID_NV` and `CL_DEVICE_PCI_SLOT_ID_NV`.
const PCI_BUS_ID_NV: u32 = 0x4008;
const PCI_SLOT_ID_NV: u32 = 0x4009;
/// `cl_khr_device_uuid`: `CL_DEVICE_UUID_KHR`, 16 bytes.
const DEVICE_UUID_KHR: u32 = 0x106A;
/// `cl_amd_device_attribute_query`: `CL_DEVICE_TOPOLOGY_AMD`, 24 bytes: a `cl_uint` type, 17
/// unused bytes, then bus, device and function, one byte each.
const TOPOLOGY_AMD: u32 = 0x4037;
/// The byte offsets of the bus and the device in [`TOPOLOGY_AMD`]'s answer.
const TOPOLOGY_AMD_BUS: usize = 21;
const TOPOLOGY_AMD_DEVICE: usize = 22;
/// The vendor ids for which rust-gpu-tools asks NVIDIA's or AMD's PCI queries.
const VENDOR_NVIDIA: u32 = 0x10de;
const VENDOR_AMD: [u32; 2] = [0x1002, 0x1021d00];

/// Which devices to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Admit OpenCL CPU devices as well as GPUs.
    pub include_cpu: bool,
    /// Keep only devices whose id equals, or whose name contains, one of these (all if empty).
    pub only: Vec<String>,
}

impl Selection {
    /// The selection the environment asks for ([`DEVICES_ENV`], [`CPU_ENV`]).
    pub fn from_env() -> Self {
        Selection::from_config(&crate::config::Config::from_env())
    }

    /// The selection `config` asks for.
    pub(crate) fn from_config(config: &crate::config::Config) -> Self {
        Selection {
            include_cpu: config.opencl_cpu,
            only: config.devices.clone(),
        }
    }

    fn admits(&self, id: &str, name: &str) -> bool {
        self.only.is_empty()
            || self
                .only
                .iter()
                .any(|want| want == id || name.to_lowercase().contains(&want.to_lowercase()))
    }
}

/// One OpenCL device.
#[derive(Clone, Debug)]
pub struct Device {
    /// Stable id (see the module docs).
    pub id: String,
    /// The device's name as the driver reports it.
    pub name: String,
    /// The vendor's name.
    pub vendor: String,
    /// The driver version, part of the program cache key.
    pub driver: String,
    /// Whether this is a CPU device.
    pub is_cpu: bool,
    /// Global memory in bytes.
    pub memory: u64,
    /// Number of compute units.
    pub compute_units: u32,
    /// The id bellperson 0.27 names the device by, as rust-gpu-tools 0.7 writes it: its UUID,
    /// else its PCI bus and slot; `None` where the device tells neither.
    pub bellperson_id: Option<String>,
    pub(crate) platform: ocl::Platform,
    pub(crate) device: ocl::Device,
}

impl Device {
    /// Whether the device is an NVIDIA GPU (the PTX fast path applies).
    pub fn is_nvidia(&self) -> bool {
        !self.is_cpu && self.vendor.to_lowercase().contains("nvidia")
    }
}

fn info_string(device: ocl::core::DeviceId, what: DeviceInfo) -> String {
    match ocl::core::get_device_info(device, what) {
        Ok(r) => r.to_string(),
        Err(_) => String::new(),
    }
}

fn u32_at(bytes: &[u8], i: usize) -> Option<u32> {
    let b = bytes.get(4 * i..4 * i + 4)?;
    Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// The PCI address, where the platform tells it.
fn pci_id(device: ocl::core::DeviceId) -> Option<String> {
    if let Ok(raw) = ocl::core::get_device_info_raw(device, PCI_BUS_INFO_KHR) {
        let (domain, bus, dev, func) = (
            u32_at(&raw, 0)?,
            u32_at(&raw, 1)?,
            u32_at(&raw, 2)?,
            u32_at(&raw, 3)?,
        );
        return Some(format!("pci-{domain:04x}:{bus:02x}:{dev:02x}.{func:x}"));
    }
    let bus = ocl::core::get_device_info_raw(device, PCI_BUS_ID_NV).ok()?;
    let slot = ocl::core::get_device_info_raw(device, PCI_SLOT_ID_NV).ok()?;
    let (bus, slot) = (u32_at(&bus, 0)?, u32_at(&slot, 0)?);
    Some(format!(
        "pci-0000:{bus:02x}:{:02x}.{:x}",
        slot >> 3,
        slot & 7
    ))
}

/// The id bellperson 0.27 names a device by, through rust-gpu-tools 0.7 (`Device::unique_id`
/// in its `src/device.rs`, the queries in `src/opencl/utils.rs`): the device's UUID
/// (`CL_DEVICE_UUID_KHR`) where it has one, else its PCI bus and slot from NVIDIA's or AMD's own
/// queries, picked by the vendor id. rust-gpu-tools names a device that tells neither by a
/// made-up number (from `0x1234` on, in its listing's order), which is not reproduced here:
/// `None`.
pub(crate) fn bellperson_id(device: ocl::core::DeviceId) -> Option<String> {
    let raw = |what| ocl::core::get_device_info_raw(device, what).ok();
    if let Some(uuid) = raw(DEVICE_UUID_KHR).and_then(|b| <[u8; 16]>::try_from(b).ok()) {
        return Some(uuid_id(&uuid));
    }
    let vendor = match ocl::core::get_device_info(device, DeviceInfo::VendorId) {
        Ok(DeviceInfoResult::VendorId(v)) => v,
        _ => return None,
    };
    if vendor == VENDOR_NVIDIA {
        let bus = u32_at(&raw(PCI_BUS_ID_NV)?, 0)?;
        let slot = u32_at(&raw(PCI_SLOT_ID_NV)?, 0)?;
        Some(pci_id_of(bus, slot))
    } else if VENDOR_AMD.contains(&vendor) {
        let topology = raw(TOPOLOGY_AMD)?;
        let bus = *topology.get(TOPOLOGY_AMD_BUS)?;
        let slot = *topology.get(TOPOLOGY_AMD_DEVICE)?;
        Some(pci_id_of(bus.into(), slot.into()))
    } else {
        None
    }
}

/// A UUID as rust-gpu-tools writes it (`DeviceUuid`'s `Display`, as `clinfo` does): lowercase
/// hex, 8-4-4-4-12.
fn uuid_id(uuid: &[u8; 16]) -> String {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    format!(
        "{}-{}-{}-{}-{}",
        hex(&uuid[..4]),
        hex(&uuid[4..6]),
        hex(&uuid[6..8]),
        hex(&uuid[8..10]),
        hex(&uuid[10..])
    )
}

/// A PCI bus and slot as rust-gpu-tools writes them (`PciId`'s `Display`, `bb:ss`): it packs both
/// into a `u16` as `(bus as u16) << 8 | slot as u16` and prints its two bytes, which the same
/// arithmetic reproduces for values that do not fit a byte.
fn pci_id_of(bus: u32, slot: u32) -> String {
    let [high, low] = (((bus as u16) << 8) | slot as u16).to_be_bytes();
    format!("{high:02x}:{low:02x}")
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The first OpenCL device, CPU devices (PoCL) included: the device of the crate's unit tests.
#[cfg(test)]
pub(crate) fn first_for_tests() -> Device {
    let selection = Selection {
        include_cpu: true,
        ..Selection::from_env()
    };
    list(&selection)
        .expect("list OpenCL devices")
        .into_iter()
        .next()
        .expect("no OpenCL device: run scripts/test.sh, which installs PoCL")
}

/// Every device the selection admits, GPUs first, in a stable order.
///
/// The platforms are enumerated once per process, under a lock: OpenCL loaders and drivers
/// initialise themselves on the first call, and concurrent first calls were seen to return no
/// platform at all (ocl-icd with PoCL).
pub fn list(selection: &Selection) -> Result<Vec<Device>, GpuError> {
    static ALL: Mutex<Option<Vec<Device>>> = Mutex::new(None);
    let mut all = ALL
        .lock()
        .map_err(|_| GpuError::Ocl("device list lock poisoned".into()))?;
    if all.is_none() {
        *all = Some(discover());
    }
    let admitted = all
        .iter()
        .flatten()
        .filter(|d| (selection.include_cpu || !d.is_cpu) && selection.admits(&d.id, &d.name))
        .cloned()
        .collect();
    Ok(admitted)
}

fn discover() -> Vec<Device> {
    // No platform at all (no ICD loader entries) is an empty list, not an error.
    let platforms = ocl::core::get_platform_ids().unwrap_or_else(|e| {
        log::info!("gpu: no OpenCL platform ({e})");
        Vec::new()
    });
    let mut found = Vec::new();
    for platform_id in platforms {
        let platform = ocl::Platform::new(platform_id);
        let platform_name = ocl::core::get_platform_info(platform_id, PlatformInfo::Name)
            .map(|r| r.to_string())
            .unwrap_or_default();
        let ids =
            ocl::core::get_device_ids(platform_id, Some(DeviceType::ALL), None).unwrap_or_default();
        for core_id in ids {
            let is_cpu = matches!(
                ocl::core::get_device_info(core_id, DeviceInfo::Type),
                Ok(DeviceInfoResult::Type(t)) if t.contains(DeviceType::CPU)
            );
            let name = info_string(core_id, DeviceInfo::Name);
            let memory = match ocl::core::get_device_info(core_id, DeviceInfo::GlobalMemSize) {
                Ok(DeviceInfoResult::GlobalMemSize(m)) => m,
                _ => 0,
            };
            let compute_units =
                match ocl::core::get_device_info(core_id, DeviceInfo::MaxComputeUnits) {
                    Ok(DeviceInfoResult::MaxComputeUnits(n)) => n,
                    _ => 1,
                };
            let fallback = slug(&format!("{platform_name}-{name}"));
            let bellperson_id = bellperson_id(core_id);
            found.push((
                pci_id(core_id),
                fallback,
                Device {
                    id: String::new(),
                    vendor: info_string(core_id, DeviceInfo::Vendor),
                    driver: info_string(core_id, DeviceInfo::DriverVersion),
                    name,
                    is_cpu,
                    memory,
                    compute_units,
                    bellperson_id,
                    platform,
                    device: ocl::Device::from(core_id),
                },
            ));
        }
    }
    // Devices without a PCI address are told apart by their index among equally named ones.
    let mut devices = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (pci, fallback, mut device) in found {
        device.id = match pci {
            Some(pci) => pci,
            None => {
                let index = seen.iter().filter(|s| **s == fallback).count();
                seen.push(fallback.clone());
                format!("{fallback}-{index}")
            }
        };
        log::debug!(
            "gpu: found {} ({}, bellperson's {}), {} bytes",
            device.name,
            device.id,
            device.bellperson_id.as_deref().unwrap_or("none"),
            device.memory
        );
        devices.push(device);
    }
    devices.sort_by(|a, b| a.is_cpu.cmp(&b.is_cpu).then_with(|| a.id.cmp(&b.id)));
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_matches_ids_and_name_fragments() {
        let s = Selection {
            include_cpu: false,
            only: vec!["pci-0000:17:00.0".into(), "h200".into()],
        };
        assert!(s.admits("pci-0000:17:00.0", "whatever"));
        assert!(s.admits("x", "NVIDIA H200"));
        assert!(!s.admits("x", "NVIDIA A100"));
        assert!(Selection::default().admits("x", "y"));
    }

    #[test]
    fn bellperson_ids_are_written_as_rust_gpu_tools_writes_them() {
        let uuid = [
            0x46, 0xab, 0xcc, 0xd6, 0x02, 0x2e, 0xb7, 0x83, 0x57, 0x2d, 0x83, 0x3f, 0x71, 0x04,
            0xd0, 0x5f,
        ];
        // rust-gpu-tools' own example of a UUID.
        assert_eq!(uuid_id(&uuid), "46abccd6-022e-b783-572d-833f7104d05f");
        assert_eq!(uuid_id(&[0; 16]), "00000000-0000-0000-0000-000000000000");
        // lspci's `4e:00.0` and `e3:00.0`; a slot that does not fit a byte spills into the bus's
        // byte, as rust-gpu-tools' u16 does.
        assert_eq!(pci_id_of(0x4e, 0), "4e:00");
        assert_eq!(pci_id_of(0xe3, 0x1f), "e3:1f");
        assert_eq!(pci_id_of(0x1e3, 0x1), "e3:01");
        assert_eq!(pci_id_of(0x17, 0x100), "17:00");
        assert_eq!(pci_id_of(0x16, 0x105), "17:05");
    }

    #[test]
    fn slugs_are_stable_names() {
        assert_eq!(
            slug("Portable Computing Language-pthread-AMD EPYC"),
            "portable-computing-language-pthread-amd-epyc"
        );
    }
}
