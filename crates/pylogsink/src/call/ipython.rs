//! Whether an IPython shell (a Jupyter kernel's) runs in this process.

use pyo3::prelude::*;

/// The running IPython shell, if any; asked only where IPython was
/// imported (a kernel imports it first), so that no import happens here.
pub(crate) fn shell(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let modules = super::capi::sys_attr(py, c"modules")?;
    let Ok(ipython) = modules.get_item("IPython") else {
        return Ok(None);
    };
    let shell = ipython.call_method0("get_ipython")?;
    Ok((!shell.is_none()).then_some(shell))
}
