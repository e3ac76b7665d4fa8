//! `jackin describe NAME`: an instance in detail, with its recent events.

use anyhow::Result;
use jiff::Timestamp;

use crate::{check_name, open_store, output};

pub fn run(name: &str) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let obj = store.get_instance(name)?;
    let container = obj.status.as_ref().and_then(|s| s.container_name.clone());
    let events = container
        .map(|c| jackin_controller::events::read(store.layout(), &c))
        .unwrap_or_default();
    print!("{}", output::describe(&obj, &events, Timestamp::now()));
    Ok(())
}
