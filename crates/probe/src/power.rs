//! Power where the machine exposes it: RAPL energy counters under
//! `/sys/class/powercap` and hwmon power sensors under `/sys/class/hwmon`.
//! Virtual machines usually expose neither; then power is unavailable.

use crate::read::read_into;
use std::fs;
use std::path::{Path, PathBuf};

pub use scalelab_core::sample::PowerReading;

#[derive(Clone, Debug)]
enum Sensor {
    Rapl { dir: PathBuf, zone: String, name: String, top_level: bool, max_energy_range_uj: Option<u64> },
    Hwmon { file: PathBuf, label: String },
}

/// The power sensors found once at start (sysfs layout does not change while
/// a run goes on).
#[derive(Clone, Debug, Default)]
pub struct PowerSources {
    sensors: Vec<Sensor>,
}

fn read_u64(path: &Path, buf: &mut String) -> Result<u64, String> {
    read_into(path, buf).map_err(|e| e.to_string())?;
    buf.trim().parse().map_err(|_| format!("{}: not a number: {:?}", path.display(), buf.trim()))
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    v.sort();
    v
}

impl PowerSources {
    /// Looks for RAPL zones and hwmon power sensors under the `sys` root.
    /// An error says why none was found.
    pub fn discover(sys: &Path) -> Result<PowerSources, String> {
        let mut buf = String::new();
        let mut sensors = Vec::new();
        let powercap = sys.join("class/powercap");
        for dir in sorted_entries(&powercap) {
            if !dir.join("energy_uj").exists() {
                continue;
            }
            let zone = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let name = read_into(&dir.join("name"), &mut buf).map(|_| buf.trim().to_string()).unwrap_or_default();
            let max = read_u64(&dir.join("max_energy_range_uj"), &mut buf).ok();
            let top_level = zone.matches(':').count() == 1;
            sensors.push(Sensor::Rapl { dir, zone, name, top_level, max_energy_range_uj: max });
        }
        for dir in sorted_entries(&sys.join("class/hwmon")) {
            let chip = read_into(&dir.join("name"), &mut buf).map(|_| buf.trim().to_string()).unwrap_or_default();
            for file in sorted_entries(&dir) {
                let fname = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if fname.starts_with("power") && (fname.ends_with("_input") || fname.ends_with("_average")) {
                    let hw = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    sensors.push(Sensor::Hwmon { file, label: format!("{hw}/{fname} ({chip})") });
                }
            }
        }
        if sensors.is_empty() {
            return Err(format!(
                "no RAPL zone with energy_uj under {} and no hwmon power sensor under {}",
                powercap.display(),
                sys.join("class/hwmon").display()
            ));
        }
        Ok(PowerSources { sensors })
    }

    /// Whether any sensor was found.
    pub fn is_empty(&self) -> bool {
        self.sensors.is_empty()
    }

    /// Reads every sensor. Readings that fail (RAPL `energy_uj` is root-only
    /// since 2020) are left out and their reasons returned.
    pub fn read(&self, buf: &mut String) -> (Vec<PowerReading>, Vec<String>) {
        let mut out = Vec::with_capacity(self.sensors.len());
        let mut errors = Vec::new();
        for s in &self.sensors {
            match s {
                Sensor::Rapl { dir, zone, name, top_level, max_energy_range_uj } => match read_u64(&dir.join("energy_uj"), buf) {
                    Ok(energy_uj) => out.push(PowerReading::Energy {
                        zone: zone.clone(),
                        name: name.clone(),
                        top_level: *top_level,
                        energy_uj,
                        max_energy_range_uj: *max_energy_range_uj,
                    }),
                    Err(e) => errors.push(e),
                },
                Sensor::Hwmon { file, label } => match read_u64(file, buf) {
                    Ok(microwatts) => out.push(PowerReading::Power { sensor: label.clone(), microwatts }),
                    Err(e) => errors.push(e),
                },
            }
        }
        (out, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_found_says_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let err = PowerSources::discover(dir.path()).unwrap_err();
        assert!(err.contains("class/powercap"), "{err}");
    }

    #[test]
    fn reads_rapl_zones_and_hwmon_sensors() {
        let dir = tempfile::tempdir().unwrap();
        let cap = dir.path().join("class/powercap");
        for (zone, name, uj) in [("intel-rapl:0", "package-0", "123456789"), ("intel-rapl:0:0", "core", "2345")] {
            fs::create_dir_all(cap.join(zone)).unwrap();
            fs::write(cap.join(zone).join("name"), format!("{name}\n")).unwrap();
            fs::write(cap.join(zone).join("energy_uj"), format!("{uj}\n")).unwrap();
            fs::write(cap.join(zone).join("max_energy_range_uj"), "262143328850\n").unwrap();
        }
        // The control-type directory has no energy counter of its own.
        fs::create_dir_all(cap.join("intel-rapl")).unwrap();
        let hw = dir.path().join("class/hwmon/hwmon3");
        fs::create_dir_all(&hw).unwrap();
        fs::write(hw.join("name"), "amdgpu\n").unwrap();
        fs::write(hw.join("power1_average"), "41000000\n").unwrap();
        let (readings, errors) = PowerSources::discover(dir.path()).unwrap().read(&mut String::new());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(readings.len(), 3);
        assert_eq!(
            readings[0],
            PowerReading::Energy {
                zone: "intel-rapl:0".into(),
                name: "package-0".into(),
                top_level: true,
                energy_uj: 123456789,
                max_energy_range_uj: Some(262143328850),
            }
        );
        assert!(matches!(&readings[1], PowerReading::Energy { top_level: false, .. }));
        assert_eq!(readings[2], PowerReading::Power { sensor: "hwmon3/power1_average (amdgpu)".into(), microwatts: 41000000 });
    }

    #[test]
    fn unreadable_counter_is_reported_not_zero() {
        let dir = tempfile::tempdir().unwrap();
        let zone = dir.path().join("class/powercap/intel-rapl:0");
        fs::create_dir_all(&zone).unwrap();
        fs::write(zone.join("name"), "package-0\n").unwrap();
        fs::write(zone.join("energy_uj"), "garbage\n").unwrap();
        let p = PowerSources::discover(dir.path()).unwrap();
        let (readings, errors) = p.read(&mut String::new());
        assert!(readings.is_empty());
        assert_eq!(errors.len(), 1);
    }
}
