; One TMA box load into shared memory, then copied out to global memory as it lies there
; (so the host sees the box's shared layout, swizzle included).
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@smem = internal addrspace(3) global [16384 x i8] undef, align 1024
@bar = internal addrspace(3) global i64 undef, align 8

declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare void @llvm.nvvm.fence.mbarrier_init.release.cluster()
declare i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3), i32)
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i16, i64, i1, i1, i32)
declare void @llvm.nvvm.mbarrier.inval.shared(ptr addrspace(3))
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)

define ptx_kernel void @box(ptr byval([128 x i8]) align 64 "nvvm.grid_constant" %tmap, ptr addrspace(1) %out, i32 %c0, i32 %c1, i32 %bytes) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %is0 = icmp eq i32 %tid, 0
  br i1 %is0, label %init, label %sync
init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @bar, i32 1)
  call void @llvm.nvvm.fence.mbarrier_init.release.cluster()
  br label %sync
sync:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  br i1 %is0, label %issue, label %wait
issue:
  %st = call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) @bar, i32 %bytes)
  %dst = addrspacecast ptr addrspace(3) @smem to ptr addrspace(7)
  call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7) %dst, ptr addrspace(3) @bar, ptr %tmap, i32 %c0, i32 %c1, i16 0, i64 0, i1 0, i1 0, i32 0)
  br label %wait
wait:
  %done = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @bar, i32 0)
  br i1 %done, label %copy, label %wait
copy:
  %words = lshr i32 %bytes, 2
  br label %loop
loop:
  %k = phi i32 [ %tid, %copy ], [ %k2, %body ]
  %more = icmp ult i32 %k, %words
  br i1 %more, label %body, label %end
body:
  %p = getelementptr i32, ptr addrspace(3) @smem, i32 %k
  %v = load i32, ptr addrspace(3) %p
  %o = getelementptr i32, ptr addrspace(1) %out, i32 %k
  store i32 %v, ptr addrspace(1) %o
  %k2 = add i32 %k, 128
  br label %loop
end:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  br i1 %is0, label %inval, label %ret
inval:
  call void @llvm.nvvm.mbarrier.inval.shared(ptr addrspace(3) @bar)
  br label %ret
ret:
  ret void
}
