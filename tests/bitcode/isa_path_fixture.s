; A hand-written function for ctest bitcode.isa_path.fixture (isa_path_fixture.sh): an optional
; marked store, a slow branch, a wait loop, a trap branch and a return. Instructions per block:
;   entry 4 -> (execz) .LBB0_2 or fallthrough %bb.1 (3, marker fix.store, a store after 1)
;   .LBB0_2 4 -> (scc1) .LBB0_7 slow (5, back to the loop) or fallthrough .LBB0_3
;   .LBB0_3 4, marker fix.spin, a loop on itself -> %bb.4 2 -> (vccnz) .LBB0_6 2 (return)
;                                                 or fallthrough %bb.5 1 (s_trap, marker fix.trap)
; 25 instructions in all.
	.text
	.globl	fixture
	.p2align	2
	.type	fixture,@function
fixture:                                ; @fixture
; %bb.0:
	s_waitcnt vmcnt(0) expcnt(0) lgkmcnt(0)
	v_cmp_eq_u32_e32 vcc, 0, v0
	s_and_saveexec_b64 s[4:5], vcc
	s_cbranch_execz .LBB0_2
; %bb.1:
	;;#ASMSTART
	; mori-path fix.store
	;;#ASMEND
	v_mov_b32_e32 v2, 1
	global_store_dword v[0:1], v2, off
	v_mov_b32_e32 v3, 0
.LBB0_2:
	s_or_b64 exec, exec, s[4:5]
	s_mov_b64 s[6:7], 0
	s_cmp_eq_u32 s8, 0
	s_cbranch_scc1 .LBB0_7
.LBB0_3:                                ; =>This Inner Loop Header: Depth=1
	;;#ASMSTART
	; mori-path fix.spin
	;;#ASMEND
	global_load_dword v4, v[0:1], off
	s_waitcnt vmcnt(0)
	v_cmp_ne_u32_e32 vcc, 0, v4
	s_cbranch_vccz .LBB0_3
; %bb.4:
	v_cmp_gt_u32_e32 vcc, 5, v4
	s_cbranch_vccnz .LBB0_6
; %bb.5:
	;;#ASMSTART
	; mori-path fix.trap
	;;#ASMEND
	s_trap 2
.LBB0_6:
	v_mov_b32_e32 v0, v4
	s_setpc_b64 s[30:31]
.LBB0_7:
	s_add_u32 s6, s6, 1
	s_addc_u32 s7, s7, 0
	s_mul_i32 s9, s8, s8
	s_sub_u32 s8, s8, 1
	s_branch .LBB0_3
.Lfunc_end0:
	.size	fixture, .Lfunc_end0-fixture
