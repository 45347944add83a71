//! Between candle tensors and our kernels' buffers: a 2-D tensor's rows as a device view with a
//! row stride, and a kernel's output buffer as a tensor.

use candle_core::cuda_backend::CudaDType;
use candle_core::op::BackpropOp;
use candle_core::{CudaDevice, CudaStorage, Layout, Shape, Storage, Tensor};
use pagoda_cuda_kernels::Rows;

use crate::error::{EngineError, Result};

fn input_error(message: &str) -> EngineError {
    EngineError::Execution(format!("CUDA kernel input: {message}"))
}

/// A 2-D tensor's rows on the GPU: the view from its first element, and the row stride (the
/// elements of a row must be contiguous; the rows need not be).
pub fn rows_of<'a, T: CudaDType>(storage: &'a CudaStorage, layout: &Layout) -> Result<Rows<'a, T>> {
    let (num_rows, width) = layout.shape().dims2()?;
    let stride = layout.stride();
    if stride[1] != 1 && (num_rows > 1 || width > 1) {
        return Err(input_error("rows must be contiguous"));
    }
    let row_stride = if num_rows > 1 { stride[0] } else { width };
    let start = layout.start_offset();
    let len = if num_rows == 0 {
        0
    } else {
        (num_rows - 1) * row_stride + width
    };
    let slice = storage.as_cuda_slice::<T>()?;
    Ok(Rows {
        view: slice.slice(start..start + len),
        row_stride,
    })
}

/// The CUDA storage of a tensor on the GPU.
pub fn cuda_storage(storage: &Storage) -> Result<&CudaStorage> {
    match storage {
        Storage::Cuda(storage) => Ok(storage),
        _ => Err(input_error("the tensor is not on the GPU")),
    }
}

/// A kernel's output buffer as a (contiguous) tensor of `shape`.
pub fn tensor_from_slice<T: CudaDType>(
    slice: candle_core::cuda_backend::cudarc::driver::CudaSlice<T>,
    device: &CudaDevice,
    shape: impl Into<Shape>,
) -> Tensor {
    let storage = Storage::Cuda(T::wrap_cuda_slice(slice, device.clone()));
    Tensor::from_storage(storage, shape, BackpropOp::none(), false)
}
