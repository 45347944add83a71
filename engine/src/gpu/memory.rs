//! What the GPU's memory holds: the driver's free/total, and the peak of what candle allocated
//! from the device's default memory pool (candle allocates with `cuMemAllocAsync`, so the pool's
//! high-water mark is the peak of weights + activations of everything run since the last reset).

use candle_core::cuda_backend::cudarc::driver::sys::{self, CUmemPool_attribute};
use candle_core::{CudaDevice, Device};

use crate::error::{EngineError, Result};

/// One reading, taken after the stream drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuMemory {
    pub free_bytes: usize,
    pub total_bytes: usize,
    /// Memory the pool holds from the driver now.
    pub pool_reserved_bytes: usize,
    /// Memory of live allocations now.
    pub pool_used_bytes: usize,
    /// The most memory live at once since the last `reset_peak`.
    pub pool_used_peak_bytes: usize,
}

/// Reads a GPU's memory; lives on the thread that loads the model.
#[derive(Debug)]
pub struct MemoryProbe {
    device: CudaDevice,
    pool: sys::CUmemoryPool,
}

fn driver_error(what: &str, error: impl std::fmt::Debug) -> EngineError {
    EngineError::Config(format!("CUDA {what}: {error:?}"))
}

#[allow(unsafe_code)]
impl MemoryProbe {
    pub fn new(device: &Device) -> Result<Self> {
        let device = device.as_cuda_device()?.clone();
        let stream = device.cuda_stream();
        let context = stream.context();
        context
            .bind_to_thread()
            .map_err(|e| driver_error("context", e))?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer and the device handle comes from a live context.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, context.cu_device()) }
            .result()
            .map_err(|e| driver_error("default memory pool", e))?;
        Ok(Self { device, pool })
    }

    fn attribute(&self, attribute: CUmemPool_attribute) -> Result<usize> {
        let mut value: u64 = 0;
        // SAFETY: the pool comes from `cuDeviceGetDefaultMemPool`; these attributes are u64.
        unsafe {
            sys::cuMemPoolGetAttribute(
                self.pool,
                attribute,
                (&mut value as *mut u64).cast::<std::ffi::c_void>(),
            )
        }
        .result()
        .map_err(|e| driver_error("memory pool attribute", e))?;
        Ok(value as usize)
    }

    /// Starts a new peak measurement.
    pub fn reset_peak(&self) -> Result<()> {
        self.synchronize()?;
        for attribute in [
            CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
        ] {
            let mut zero: u64 = 0;
            // SAFETY: as in `attribute`; the high-water marks may only be reset to 0.
            unsafe {
                sys::cuMemPoolSetAttribute(
                    self.pool,
                    attribute,
                    (&mut zero as *mut u64).cast::<std::ffi::c_void>(),
                )
            }
            .result()
            .map_err(|e| driver_error("reset memory pool peak", e))?;
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.device
            .cuda_stream()
            .synchronize()
            .map_err(|e| driver_error("synchronize", e))
    }

    pub fn snapshot(&self) -> Result<GpuMemory> {
        self.synchronize()?;
        let (free_bytes, total_bytes) = self
            .device
            .cuda_stream()
            .context()
            .mem_get_info()
            .map_err(|e| driver_error("memory info", e))?;
        Ok(GpuMemory {
            free_bytes,
            total_bytes,
            pool_reserved_bytes: self
                .attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            pool_used_bytes: self
                .attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            pool_used_peak_bytes: self
                .attribute(CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
        })
    }
}
