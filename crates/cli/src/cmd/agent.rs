//! `scalelab agent`: serve a coordinator (`--stdio` under ssh, or
//! `--listen` with TLS and a token), or print a cluster deployment
//! (`manifest --kubernetes`).

use crate::args::{AgentArgs, AgentCommand, ManifestArgs};
use crate::error::bad;
use scalelab_agent::listen::{listen, stdio, ListenConfig};
use std::process::ExitCode;

pub fn run(a: &AgentArgs) -> anyhow::Result<ExitCode> {
    if let Some(AgentCommand::Manifest(m)) = &a.command {
        return manifest(m);
    }
    let protocol = a.protocol_version.unwrap_or(scalelab_agent::PROTOCOL);
    if a.stdio {
        if a.token_file.is_some() || a.cert.is_some() {
            return Err(bad("--token-file, --cert and --key are for --listen: over --stdio, ssh authenticated the coordinator"));
        }
        // A refused session is logged here; the coordinator says why on its side.
        return match stdio(protocol, log()) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(why) => Err(anyhow::anyhow!("agent: refused: {why}")),
        };
    }
    let (Some(addr), Some(token_file)) = (&a.listen, &a.token_file) else {
        return Err(bad("give --stdio (under ssh) or --listen ADDR --token-file FILE"));
    };
    let cert_key = a.cert.as_deref().zip(a.key.as_deref());
    listen(&ListenConfig { addr, token_file, cert_key, protocol, log: log() }).map_err(bad)?;
    Ok(ExitCode::SUCCESS)
}

/// The agent's lines on stderr, control characters escaped (a peer's
/// address or a TLS error may carry text from the network).
fn log() -> scalelab_agent::Log {
    std::sync::Arc::new(|line: &str| eprintln!("{}", scalelab_core::escape_control(line)))
}

/// A Kubernetes Indexed Job of `--agents` pods, each `scalelab agent
/// --listen` with the token from a Secret, and a headless Service that gives
/// each pod a stable name (`NAME-INDEX.NAME`), so the coordinator lists
/// them as `--agent tcp://NAME-0.NAME:PORT ...`.
fn manifest(m: &ManifestArgs) -> anyhow::Result<ExitCode> {
    if !m.kubernetes {
        return Err(bad("give --kubernetes (the only manifest kind so far)"));
    }
    let dns = |s: &str| !s.is_empty() && s.len() <= 52 && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !dns(&m.name) || !dns(&m.secret) {
        return Err(bad("--name and --secret must be lowercase letters, digits and '-' (52 at most)"));
    }
    if m.agents == 0 || m.agents > 1000 {
        return Err(bad("--agents must be between 1 and 1000"));
    }
    if m.image.trim().is_empty() || m.image.contains(char::is_whitespace) || m.image.contains('"') {
        return Err(bad("--image must be one image reference, e.g. registry.example/scalelab:0.1"));
    }
    let (name, secret, image, n, port) = (&m.name, &m.secret, &m.image, m.agents, m.port);
    print!(
        r#"# {n} scalelab agents: an Indexed Job and a headless Service (docs/agents.md).
# The token: kubectl create secret generic {secret} --from-literal=token="$(openssl rand -hex 32)"
# The coordinator (in the cluster): scalelab sweep URL --agent-token-file TOKEN{agents}
apiVersion: v1
kind: Service
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: {name}
spec:
  clusterIP: None
  selector:
    app.kubernetes.io/name: {name}
  ports:
    - name: control
      port: {port}
      targetPort: {port}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  labels:
    app.kubernetes.io/name: {name}
spec:
  completionMode: Indexed
  completions: {n}
  parallelism: {n}
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {name}
    spec:
      subdomain: {name}
      restartPolicy: Never
      containers:
        - name: agent
          image: "{image}"
          args: ["agent", "--listen", "0.0.0.0:{port}", "--token-file", "/etc/scalelab/token"]
          ports:
            - name: control
              containerPort: {port}
          volumeMounts:
            - name: token
              mountPath: /etc/scalelab
              readOnly: true
      volumes:
        - name: token
          secret:
            secretName: {secret}
            defaultMode: 0400
            items:
              - key: token
                path: token
"#,
        agents = (0..n).map(|i| format!(" --agent tcp://{name}-{i}.{name}:{port}")).collect::<String>(),
    );
    Ok(ExitCode::SUCCESS)
}
