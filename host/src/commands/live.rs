//! The flags of the commands that read a live cluster as the controller would see it
//! (`weir diff`, `weir snapshot`): where, which Services, and how the controller is set up.

use std::path::PathBuf;

use anyhow::Context;
use weir::client::ApiRate;
use weir::selector::LabelSelector;
use weir::snapshot::{ClusterState, Scope, Shape};

use super::run::OutputArgs;

/// Which cluster and Services to read, and the controller settings a sync depends on.
#[derive(clap::Args, Debug, Clone)]
pub struct LiveArgs {
    /// Kubeconfig file. Default: as kube-rs infers it (KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account). Only list requests are sent.
    #[arg(long, env = "WEIR_KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Only the Services of this namespace. Default: every namespace.
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,

    /// Only the Services whose labels match this selector (`a=b,c in (x,y),!d`), as
    /// `weir run --service-selector` picks them.
    #[arg(
        short = 'l',
        long,
        value_name = "SELECTOR",
        visible_alias = "service-selector"
    )]
    pub selector: Option<String>,

    /// Policy configuration handed to the guest (JSON or YAML file), as `weir run
    /// --policy-config` gives it.
    #[arg(long, visible_alias = "config", value_name = "FILE")]
    pub policy_config: Option<PathBuf>,

    #[command(flatten)]
    pub outputs: OutputArgs,
}

impl LiveArgs {
    /// The controller settings these flags describe (the policy configuration file read).
    pub fn shape(&self) -> anyhow::Result<Shape> {
        Ok(Shape {
            outputs: self.outputs.outputs(),
            config: self
                .policy_config
                .as_deref()
                .map(super::policy_config::read)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// Reads the Services in scope and what their syncs read, as `command` (it names the
    /// client in the API server's logs).
    pub async fn read(&self, command: &str) -> anyhow::Result<ClusterState> {
        let selector = self
            .selector
            .as_deref()
            .map(|text| {
                LabelSelector::parse(text)
                    .map_err(|e| anyhow::anyhow!("invalid --selector {text:?}: {e}"))
            })
            .transpose()?;
        let scope = Scope {
            namespace: self.namespace.clone(),
            selector,
        };
        let agent = super::run::user_agent(command);
        let client = super::run::client(self.kubeconfig.as_deref(), &agent, ApiRate::KCM).await?;
        ClusterState::read(&client, &scope)
            .await
            .context("cannot read the cluster")
    }
}
