//! HiGHS, compiled into the component by `build.rs`: a checked [`Model`] in, HiGHS's answer
//! out. One thread; the callback in `highs/caseload_highs.c` stops the run when the job is
//! cancelled or its time is up, hands each better MIP solution to
//! [`RunContext::incumbent`], and HiGHS's log (its console output, which goes nowhere in a
//! component) to the job's log.

#![allow(unsafe_code)] // The FFI to HiGHS: the only unsafe code of the plugin.

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};
use std::time::Instant;

use caseload_sdk::{LogLevel, RunContext};

use crate::input::Sense;
use crate::model::Model;

type HighsInt = i32;

unsafe extern "C" {
    fn Highs_create() -> *mut c_void;
    fn Highs_destroy(highs: *mut c_void);
    fn Highs_setBoolOptionValue(
        highs: *mut c_void,
        option: *const c_char,
        value: HighsInt,
    ) -> HighsInt;
    fn Highs_setIntOptionValue(
        highs: *mut c_void,
        option: *const c_char,
        value: HighsInt,
    ) -> HighsInt;
    fn Highs_setDoubleOptionValue(
        highs: *mut c_void,
        option: *const c_char,
        value: f64,
    ) -> HighsInt;
    #[allow(clippy::too_many_arguments)]
    fn Highs_passModel(
        highs: *mut c_void,
        num_col: HighsInt,
        num_row: HighsInt,
        num_nz: HighsInt,
        q_num_nz: HighsInt,
        a_format: HighsInt,
        q_format: HighsInt,
        sense: HighsInt,
        offset: f64,
        col_cost: *const f64,
        col_lower: *const f64,
        col_upper: *const f64,
        row_lower: *const f64,
        row_upper: *const f64,
        a_start: *const HighsInt,
        a_index: *const HighsInt,
        a_value: *const f64,
        q_start: *const HighsInt,
        q_index: *const HighsInt,
        q_value: *const f64,
        integrality: *const HighsInt,
    ) -> HighsInt;
    fn Highs_setSparseSolution(
        highs: *mut c_void,
        num_entries: HighsInt,
        index: *const HighsInt,
        value: *const f64,
    ) -> HighsInt;
    fn Highs_run(highs: *mut c_void) -> HighsInt;
    fn Highs_getModelStatus(highs: *const c_void) -> HighsInt;
    fn Highs_getSolution(
        highs: *const c_void,
        col_value: *mut f64,
        col_dual: *mut f64,
        row_value: *mut f64,
        row_dual: *mut f64,
    ) -> HighsInt;
    fn Highs_getDoubleInfoValue(
        highs: *const c_void,
        info: *const c_char,
        value: *mut f64,
    ) -> HighsInt;
    fn Highs_getIntInfoValue(
        highs: *const c_void,
        info: *const c_char,
        value: *mut HighsInt,
    ) -> HighsInt;
    fn Highs_getInt64InfoValue(
        highs: *const c_void,
        info: *const c_char,
        value: *mut i64,
    ) -> HighsInt;
    fn caseload_highs_watch(highs: *mut c_void) -> i32;
}

const STATUS_ERROR: HighsInt = -1;
const MATRIX_COLUMNWISE: HighsInt = 1;
const SOLUTION_FEASIBLE: HighsInt = 2;

/// What HiGHS answered.
#[derive(Debug)]
pub struct Solved {
    /// HiGHS's model status (`kHighsModelStatus*`).
    pub model_status: i32,
    pub primal_feasible: bool,
    pub dual_feasible: bool,
    pub objective: f64,
    pub values: Vec<f64>,
    pub reduced_costs: Vec<f64>,
    pub row_duals: Vec<f64>,
    pub mip_gap: f64,
    pub mip_dual_bound: f64,
    pub mip_nodes: i64,
    pub simplex_iterations: i32,
    /// When the best solution was found, for a MIP (the last incumbent); the end otherwise.
    pub time_to_best: Option<std::time::Duration>,
}

/// The run's state the callback reads: set for the length of one [`solve`] (a component
/// runs one job on one thread).
struct Watch {
    context: *const RunContext,
    stop_at: Instant,
    started: Instant,
    columns: usize,
    names: *const Vec<String>,
    last_improvement: Option<std::time::Duration>,
    /// HiGHS's log since its last newline: it writes some lines in pieces.
    log_line: String,
}

impl Watch {
    fn context(&self) -> &RunContext {
        // SAFETY: `solve` sets the pointer to a context that outlives the run.
        unsafe { &*self.context }
    }

    /// Appends a piece of HiGHS's log, writing each line it completes to the job's log
    /// (`end`: what is left too).
    fn log(&mut self, piece: &str, end: bool) {
        self.log_line.push_str(piece);
        while let Some(newline) = self.log_line.find('\n') {
            let line: String = self.log_line.drain(..=newline).collect();
            self.context().log(LogLevel::Info, line.trim_end());
        }
        if end && !self.log_line.trim().is_empty() {
            let line = std::mem::take(&mut self.log_line);
            self.context().log(LogLevel::Info, line.trim_end());
        }
    }
}

/// Ends the watch of a solve however the solve ends: the rest of the log is written and the
/// callback finds no run.
struct EndWatch;

impl Drop for EndWatch {
    fn drop(&mut self) {
        if let Some(mut watch) = WATCH.take() {
            watch.log("", true);
        }
    }
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

#[unsafe(no_mangle)]
extern "C" fn caseload_lp_should_stop() -> i32 {
    WATCH.with_borrow(|watch| {
        watch.as_ref().is_some_and(|watch| {
            // SAFETY: `solve` sets the pointer to a context that outlives the run.
            let context = unsafe { &*watch.context };
            Instant::now() >= watch.stop_at || context.cancelled()
        })
    }) as i32
}

#[unsafe(no_mangle)]
extern "C" fn caseload_lp_improving(objective: f64, values: *const f64, size: i32) {
    WATCH.with_borrow_mut(|watch| {
        let Some(watch) = watch.as_mut() else { return };
        watch.last_improvement = Some(watch.started.elapsed());
        if values.is_null() || size as usize != watch.columns {
            return;
        }
        // SAFETY: HiGHS passes `size` values, and both pointers outlive the call.
        let (context, names, values) = unsafe {
            (
                &*watch.context,
                &*watch.names,
                std::slice::from_raw_parts(values, watch.columns),
            )
        };
        context.incumbent(objective, || {
            let values: serde_json::Map<String, serde_json::Value> = names
                .iter()
                .zip(values)
                .map(|(name, &value)| (name.clone(), serde_json::Value::from(value)))
                .collect();
            serde_json::json!({ "objective": objective, "values": values })
        });
    });
}

#[unsafe(no_mangle)]
extern "C" fn caseload_lp_log(message: *const c_char) {
    if message.is_null() {
        return;
    }
    // SAFETY: HiGHS passes a NUL-terminated string that outlives the call.
    let message = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    WATCH.with_borrow_mut(|watch| {
        if let Some(watch) = watch {
            watch.log(&message, false);
        }
    });
}

/// Solves `model` until `stop_at` at the latest.
pub fn solve(model: &Model, context: &RunContext, stop_at: Instant) -> Result<Solved, String> {
    let columns = model.cost.len();
    let rows = model.row_lower.len();
    let integrality: Vec<HighsInt> = model
        .integer
        .iter()
        .map(|&integer| integer as HighsInt)
        .collect();
    // SAFETY: every pointer below points into vectors that live until the end of this
    // function, with the lengths HiGHS is told.
    unsafe {
        let highs = Highs_create();
        if highs.is_null() {
            return Err("HiGHS could not be created".into());
        }
        let guard = Destroy(highs);
        // Output on, to the callback only.
        option_bool(highs, c"output_flag", true)?;
        option_bool(highs, c"log_to_console", false)?;
        option_int(highs, c"threads", 1)?;
        option_int(
            highs,
            c"random_seed",
            (context.seed() % i32::MAX as u64) as i32,
        )?;
        let seconds = stop_at
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        option_double(highs, c"time_limit", seconds.max(0.0))?;
        if let Some(gap) = model.mip_gap {
            option_double(highs, c"mip_rel_gap", gap)?;
        }
        // Watched from before the model is passed, so that HiGHS's reasons for refusing it
        // are in the log.
        if caseload_highs_watch(highs) != 0 {
            return Err("HiGHS's callback could not be set".into());
        }
        let started = Instant::now();
        WATCH.set(Some(Watch {
            context,
            stop_at,
            started,
            columns,
            names: &model.column_names,
            last_improvement: None,
            log_line: String::new(),
        }));
        let watching = EndWatch;
        let status = Highs_passModel(
            highs,
            columns as HighsInt,
            rows as HighsInt,
            model.nonzeros() as HighsInt,
            0,
            MATRIX_COLUMNWISE,
            0,
            match model.sense {
                Sense::Minimize => 1,
                Sense::Maximize => -1,
            },
            model.offset,
            model.cost.as_ptr(),
            model.column_lower.as_ptr(),
            model.column_upper.as_ptr(),
            model.row_lower.as_ptr(),
            model.row_upper.as_ptr(),
            model.start.as_ptr(),
            model.index.as_ptr(),
            model.value.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            if model.is_mip() {
                integrality.as_ptr()
            } else {
                std::ptr::null()
            },
        );
        if status == STATUS_ERROR {
            return Err("HiGHS refused the model".into());
        }
        // A MIP's start: HiGHS completes it and keeps it as its first solution if feasible.
        if model.is_mip() && !model.initial.is_empty() {
            let (index, value): (Vec<HighsInt>, Vec<f64>) = model.initial.iter().copied().unzip();
            if Highs_setSparseSolution(
                highs,
                index.len() as HighsInt,
                index.as_ptr(),
                value.as_ptr(),
            ) == STATUS_ERROR
            {
                return Err("HiGHS refused the start (initial_values)".into());
            }
        }
        let run_status = Highs_run(highs);
        let last_improvement =
            WATCH.with_borrow(|watch| watch.as_ref().and_then(|watch| watch.last_improvement));
        drop(watching);
        if run_status == STATUS_ERROR && Highs_getModelStatus(highs) == 0 {
            return Err("HiGHS failed before it had a status".into());
        }
        let mut solved = Solved {
            model_status: Highs_getModelStatus(highs),
            primal_feasible: info_int(highs, c"primal_solution_status") == SOLUTION_FEASIBLE,
            dual_feasible: info_int(highs, c"dual_solution_status") == SOLUTION_FEASIBLE,
            objective: info_double(highs, c"objective_function_value"),
            values: vec![0.0; columns],
            reduced_costs: vec![0.0; columns],
            row_duals: vec![0.0; rows],
            mip_gap: info_double(highs, c"mip_gap"),
            mip_dual_bound: info_double(highs, c"mip_dual_bound"),
            mip_nodes: info_int64(highs, c"mip_node_count"),
            simplex_iterations: info_int(highs, c"simplex_iteration_count"),
            time_to_best: None,
        };
        let mut row_values = vec![0.0; rows];
        Highs_getSolution(
            highs,
            solved.values.as_mut_ptr(),
            solved.reduced_costs.as_mut_ptr(),
            row_values.as_mut_ptr(),
            solved.row_duals.as_mut_ptr(),
        );
        solved.time_to_best = if model.is_mip() {
            last_improvement
        } else {
            Some(started.elapsed())
        };
        drop(guard);
        Ok(solved)
    }
}

struct Destroy(*mut c_void);

impl Drop for Destroy {
    fn drop(&mut self) {
        // SAFETY: created by Highs_create and destroyed once.
        unsafe { Highs_destroy(self.0) }
    }
}

unsafe fn option_bool(highs: *mut c_void, name: &CStr, value: bool) -> Result<(), String> {
    // SAFETY: a live instance and a NUL-terminated name.
    checked(name, unsafe {
        Highs_setBoolOptionValue(highs, name.as_ptr(), value as HighsInt)
    })
}

unsafe fn option_int(highs: *mut c_void, name: &CStr, value: i32) -> Result<(), String> {
    // SAFETY: as above.
    checked(name, unsafe {
        Highs_setIntOptionValue(highs, name.as_ptr(), value)
    })
}

unsafe fn option_double(highs: *mut c_void, name: &CStr, value: f64) -> Result<(), String> {
    // SAFETY: as above.
    checked(name, unsafe {
        Highs_setDoubleOptionValue(highs, name.as_ptr(), value)
    })
}

fn checked(name: &CStr, status: HighsInt) -> Result<(), String> {
    if status == STATUS_ERROR {
        Err(format!("HiGHS refused its option {name:?}"))
    } else {
        Ok(())
    }
}

unsafe fn info_double(highs: *const c_void, name: &CStr) -> f64 {
    let mut value = f64::NAN;
    // SAFETY: as above; HiGHS writes one f64.
    unsafe { Highs_getDoubleInfoValue(highs, name.as_ptr(), &mut value) };
    value
}

unsafe fn info_int(highs: *const c_void, name: &CStr) -> i32 {
    let mut value = 0;
    // SAFETY: as above; HiGHS writes one HighsInt.
    unsafe { Highs_getIntInfoValue(highs, name.as_ptr(), &mut value) };
    value
}

unsafe fn info_int64(highs: *const c_void, name: &CStr) -> i64 {
    let mut value = 0;
    // SAFETY: as above; HiGHS writes one int64.
    unsafe { Highs_getInt64InfoValue(highs, name.as_ptr(), &mut value) };
    value
}
