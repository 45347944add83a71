//! Benchmark 1 of the CUDA work: decode step time vs batch size, beside the HBM floor.
//!
//! `cargo run --release -p pagoda-engine --features cuda --example gpu_decode_bench -- --model DIR
//!  [--device cuda:0] [--dtype bfloat16] [--batch-sizes 1,2,4,8,16,32,64,128,256]
//!  [--context-len 512] [--block-size 16] [--warmup 3] [--iters 20] [--out FILE.jsonl]`
//!
//! Loads DIR's config.json shape with random weights (`LoadFormat::Dummy`), measures the GPU's
//! copy bandwidth, then for each batch size fills B sequences with `context-len - 1` tokens of
//! context and times decode steps of one token per sequence, two ways: `step_ms_*` returns the
//! logits rows to the host (`ModelRunner::execute`, what tests and tools read), `greedy_step_ms_*`
//! is the serving path (`StepExecutor::execute`: greedy requests, the argmax taken on the GPU and
//! only token ids copied back), `sampled_step_ms_*` the same with temperature 0.8 and top-p 0.95. Prints JSON lines: one header (`"kind": "machine"`), then one line
//! per batch size; `--out` writes the same lines to a file.
//! GB are decimal (1e9 bytes).

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use candle_core::{CudaDevice, Device};
use pagoda_engine::attention::cuda::CudaKvCache;
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::config::ModelDType;
use pagoda_engine::kv::{num_blocks_for, BlockId};
use pagoda_engine::models::{load_model_with, CausalLm, LoadFormat, LoadOptions, WeightFormat};
use pagoda_engine::runner::{ModelRunner, StepExecutor};
use pagoda_engine::{DeviceSpec, EngineRequest, RequestId, SamplingParams, StopConditions};
use serde_json::{json, Value};

mod floor;

use floor::{weights_bytes, Floor, StepTimes};

type BoxResult<T> = Result<T, Box<dyn Error>>;

/// Most prompt tokens one prefill step carries while the context is filled.
const MAX_PREFILL_TOKENS: usize = 2048;
/// Size of each of the two buffers of the bandwidth measurement.
const COPY_BYTES: usize = 1 << 30;
const COPIES: usize = 10;

#[derive(Debug)]
struct Args {
    model: PathBuf,
    device: DeviceSpec,
    dtype: ModelDType,
    batch_sizes: Vec<usize>,
    context_len: usize,
    block_size: usize,
    warmup: usize,
    iters: usize,
    out: Option<PathBuf>,
}

const USAGE: &str = "usage: gpu_decode_bench --model DIR [--device cuda:0] [--dtype bfloat16] \
     [--batch-sizes 1,2,4,...] [--context-len 512] [--block-size 16] [--warmup 3] [--iters 20] \
     [--out FILE.jsonl]";

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let mut args = Args {
        model: PathBuf::new(),
        device: DeviceSpec::Cuda(0),
        dtype: ModelDType::Bf16,
        batch_sizes: vec![1, 2, 4, 8, 16, 32, 64, 128, 256],
        context_len: 512,
        block_size: 16,
        warmup: 3,
        iters: 20,
        out: None,
    };
    while let Some(flag) = raw.next() {
        let value = raw.next().ok_or(format!("{flag} needs a value\n{USAGE}"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--model" => args.model = PathBuf::from(&value),
            "--device" => {
                args.device = DeviceSpec::parse(&value).ok_or("--device: cpu|cuda|cuda:N")?
            }
            "--dtype" => {
                args.dtype = ModelDType::parse(&value).ok_or("--dtype: bfloat16|float16|float32")?
            }
            "--batch-sizes" => {
                let sizes = value.split(',').map(|v| v.trim().parse());
                args.batch_sizes = sizes
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--batch-sizes {value}: {e}"))?
            }
            "--context-len" => args.context_len = number()?,
            "--block-size" => args.block_size = number()?,
            "--warmup" => args.warmup = number()?,
            "--iters" => args.iters = number()?,
            "--out" => args.out = Some(PathBuf::from(&value)),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    if args.model.as_os_str().is_empty() {
        return Err(USAGE.into());
    }
    if args.context_len == 0 || args.iters == 0 || args.batch_sizes.contains(&0) {
        return Err("--context-len, --iters and --batch-sizes must be positive".into());
    }
    if !args.block_size.is_power_of_two() || args.block_size > 256 {
        return Err("--block-size must be a power of two in 1..=256".into());
    }
    Ok(args)
}

/// Device-to-device copy bandwidth in GB/s, counting each byte read and written.
fn measure_bandwidth(cuda: &CudaDevice) -> BoxResult<f64> {
    let source = cuda.alloc_zeros::<u8>(COPY_BYTES)?;
    let mut target = cuda.alloc_zeros::<u8>(COPY_BYTES)?;
    let stream = cuda.cuda_stream();
    cuda.memcpy_dtod(&source, &mut target)?;
    stream.synchronize()?;
    let started = Instant::now();
    for _ in 0..COPIES {
        cuda.memcpy_dtod(&source, &mut target)?;
    }
    stream.synchronize()?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(2.0 * (COPY_BYTES * COPIES) as f64 / seconds / 1e9)
}

/// The sequences of one batch size: sequence `i` owns blocks `i * blocks_per_seq ..`.
#[derive(Debug)]
struct Batch {
    num_seqs: usize,
    blocks_per_seq: usize,
    block_size: usize,
    vocab_size: usize,
}

impl Batch {
    /// Sequence `seq`'s share of a step: `len` tokens after `computed`, the blocks they need.
    fn seq(&self, seq: usize, computed: usize, len: usize) -> ScheduledSeq {
        let first = seq * self.blocks_per_seq;
        let blocks = num_blocks_for(computed + len, self.block_size);
        ScheduledSeq {
            id: RequestId(seq as u64),
            num_computed_tokens: computed,
            new_token_ids: (computed..computed + len)
                .map(|p| ((seq * 7919 + p * 104_729 + 1) % self.vocab_size) as u32)
                .collect(),
            num_draft_tokens: 0,
            block_table: (first..first + blocks).map(|b| BlockId(b as u32)).collect(),
            sample: true,
            lora: None,
            prompt_logprobs: None,
        }
    }

    /// Prefills `prefix` tokens of every sequence, packed up to `MAX_PREFILL_TOKENS` a step.
    fn fill_context(&self, runner: &mut ModelRunner, prefix: usize) -> BoxResult<()> {
        let (mut seq, mut done) = (0, 0);
        while prefix > 0 && seq < self.num_seqs {
            let mut plan = BatchPlan::default();
            while seq < self.num_seqs && plan.num_batched_tokens < MAX_PREFILL_TOKENS {
                let len = (prefix - done).min(MAX_PREFILL_TOKENS - plan.num_batched_tokens);
                plan.seqs.push(self.seq(seq, done, len));
                plan.num_batched_tokens += len;
                done += len;
                if done == prefix {
                    (seq, done) = (seq + 1, 0);
                }
            }
            runner.execute(&plan)?;
        }
        Ok(())
    }

    /// The decode plan of step `step` after the context: one token per sequence.
    fn decode_plan(&self, args: &Args, step: usize) -> BatchPlan {
        let computed = args.context_len - 1 + step;
        BatchPlan {
            seqs: (0..self.num_seqs)
                .map(|s| self.seq(s, computed, 1))
                .collect(),
            num_batched_tokens: self.num_seqs,
        }
    }

    /// Fills the context, then times decode steps: first with the logits copied to the host,
    /// then (the context growing on) through the serving path with greedy requests, then with
    /// sampled ones. Returns the times of each kind's timed steps in ms.
    fn time_decode(&self, runner: &mut ModelRunner, args: &Args) -> BoxResult<StepTimes> {
        self.fill_context(runner, args.context_len - 1)?;
        let mut times = StepTimes::default();
        let steps = args.warmup + args.iters;
        for step in 0..steps {
            let plan = self.decode_plan(args, step);
            let started = Instant::now();
            let logits = runner.execute(&plan)?;
            let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
            let last = step + 1 == steps;
            if logits.num_rows() != self.num_seqs
                || (last && logits.values.iter().any(|x| !x.is_finite()))
            {
                return Err(
                    "the decode step gave a wrong number of logits rows or non-finite logits"
                        .into(),
                );
            }
            if step >= args.warmup {
                times.logits_ms.push(elapsed_ms);
            }
        }
        times.greedy_ms = self.time_served(runner, args, steps, &SamplingParams::greedy())?;
        let sampled = SamplingParams {
            temperature: 0.8,
            top_p: 0.95,
            seed: Some(0),
            ..SamplingParams::default()
        };
        times.sampled_ms = self.time_served(runner, args, 2 * steps, &sampled)?;
        Ok(times)
    }

    /// Times `warmup + iters` decode steps through the serving path (`StepExecutor::execute`,
    /// tokens sampled where the logits are) with every sequence sampling by `sampling`, the
    /// context continuing after `first_step` steps.
    fn time_served(
        &self,
        runner: &mut ModelRunner,
        args: &Args,
        first_step: usize,
        sampling: &SamplingParams,
    ) -> BoxResult<Vec<f64>> {
        let steps = args.warmup + args.iters;
        for seq in 0..self.num_seqs {
            let id = RequestId(seq as u64);
            StepExecutor::release(runner, id);
            let request =
                EngineRequest::new(id, Vec::new(), sampling.clone(), StopConditions::default());
            StepExecutor::add_request(runner, &request, steps);
        }
        let mut times = Vec::with_capacity(args.iters);
        for step in first_step..first_step + steps {
            let plan = self.decode_plan(args, step);
            let started = Instant::now();
            let output = StepExecutor::execute(runner, &plan)?;
            let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
            if output.num_rows() != self.num_seqs || output.tokens.iter().any(Option::is_none) {
                return Err("a served decode step did not give one token per sequence".into());
            }
            if step >= first_step + args.warmup {
                times.push(elapsed_ms);
            }
        }
        Ok(times)
    }
}

/// Runs batch size `num_seqs` on `model`; gives the model back whatever happened.
fn bench_batch(
    model: Box<dyn CausalLm>,
    args: &Args,
    num_seqs: usize,
) -> (Box<dyn CausalLm>, BoxResult<StepTimes>) {
    let config = model.config();
    let batch = Batch {
        num_seqs,
        blocks_per_seq: num_blocks_for(
            args.context_len + 3 * (args.warmup + args.iters),
            args.block_size,
        ),
        block_size: args.block_size,
        vocab_size: config.vocab_size,
    };
    let (shape, num_layers) = (config.attn_shape(), config.num_layers);
    let num_blocks = num_seqs * batch.blocks_per_seq;
    let cache = CudaKvCache::new(
        model.device(),
        model.dtype(),
        num_layers,
        shape,
        args.block_size,
        num_blocks,
    );
    let cache = match cache {
        Ok(cache) => cache,
        Err(e) => {
            let per_token = shape.kv_bytes_per_token(num_layers, model.dtype());
            let gib = (num_blocks * args.block_size * per_token) as f64 / (1u64 << 30) as f64;
            let message =
                format!("a KV cache of {num_blocks} blocks ({gib:.2} GiB) does not fit: {e}");
            return (model, Err(message.into()));
        }
    };
    let mut runner = ModelRunner::new(model, Box::new(cache), args.block_size);
    let times = batch.time_decode(&mut runner, args);
    (runner.into_model(), times)
}

/// Prints `line` and appends it to `out` when there is one.
fn emit(out: &mut Option<std::fs::File>, line: &Value) -> BoxResult<()> {
    println!("{line}");
    if let Some(file) = out {
        writeln!(file, "{line}")?;
        file.flush()?;
    }
    Ok(())
}

/// Loads `--model` with random weights; checks the steps fit its context length.
fn load_model(args: &Args, device: &Device) -> BoxResult<Box<dyn CausalLm>> {
    let options = LoadOptions {
        device: device.clone(),
        dtype: args.dtype,
        weight_format: WeightFormat::F32,
        load_format: LoadFormat::Dummy,
        seed: 0,
    };
    let model = load_model_with(&args.model, &options)?;
    let longest = args.context_len + 3 * (args.warmup + args.iters);
    let limit = model.config().context_length;
    if longest > limit {
        return Err(format!(
            "context-len + 2 × (warmup + iters) = {longest} > context length {limit}"
        )
        .into());
    }
    Ok(model)
}

fn main() -> BoxResult<()> {
    let args = parse_args()?;
    if !args.device.is_cuda() {
        return Err("gpu_decode_bench measures a CUDA device: pass --device cuda or cuda:N".into());
    }
    let mut out = args.out.as_ref().map(std::fs::File::create).transpose()?;
    let device = args.device.open()?;
    let cuda = device.as_cuda_device()?.clone();
    let bandwidth_gbps = measure_bandwidth(&cuda)?;
    let mut model = load_model(&args, &device)?;
    let config = model.config().clone();
    let unix_time = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let header = json!({
        "kind": "machine",
        "gpu": cuda.cuda_stream().context().name()?,
        "measured_bandwidth_gbps": bandwidth_gbps,
        "model": args.model.display().to_string(),
        "dtype": model.dtype().as_str(),
        "context_len": args.context_len,
        "unix_time": unix_time,
    });
    emit(&mut out, &header)?;
    let floor = Floor {
        weights_bytes: weights_bytes(&config, model.dtype().size_in_bytes()),
        kv_bytes_per_token: config.kv_bytes_per_token(model.dtype()),
        bandwidth_gbps,
    };
    let mut failures = 0;
    for &batch in &args.batch_sizes {
        let (returned, times) = bench_batch(model, &args, batch);
        model = returned;
        match times {
            Ok(times) => {
                let mean_keys = args.context_len + args.warmup + (args.iters - 1) / 2;
                emit(
                    &mut out,
                    &floor.line(batch, args.context_len, mean_keys, &times),
                )?
            }
            Err(e) => {
                failures += 1;
                eprintln!("batch size {batch}: skipped: {e}");
            }
        }
    }
    if failures == args.batch_sizes.len() {
        return Err("no batch size ran".into());
    }
    Ok(())
}
