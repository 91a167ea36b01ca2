//! The state of a table's tablets (`@tablet_state`) and the commands that change it.

/// The state of a table's tablets (`@tablet_state`). Tables are created mounted (YT creates
/// them unmounted; `mount-table` is accepted and needed by nothing here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TabletState {
    #[default]
    Mounted,
    /// Readable, not writable (`freeze-table`).
    Frozen,
    /// Neither readable nor writable; required for `reshard-table` and `alter-table`.
    Unmounted,
}

impl TabletState {
    /// YT's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            TabletState::Mounted => "mounted",
            TabletState::Frozen => "frozen",
            TabletState::Unmounted => "unmounted",
        }
    }
}

/// A tablet-state command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TabletCommand {
    Mount,
    Unmount,
    Remount,
    Freeze,
    Unfreeze,
}
