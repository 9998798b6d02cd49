package synth

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// Options say what Write produces.
type Options struct {
	Shape Shape
	Quant Quant
	Seed  uint64
	// ShardBytes caps a shard's tensor bytes (mlx-lm: 5 GB); 0 means that.
	ShardBytes int64
	// Workers generate and write in parallel; 0 means one per CPU.
	Workers int
	// Progress, when set, is called now and then with bytes written so far.
	Progress func(done, total int64)
}

// defaultShardBytes is mlx-lm's save_model shard limit.
const defaultShardBytes = 5 << 30

// tensor is one tensor of the plan: where it goes and how its bytes are made.
type tensor struct {
	name  string
	dtype string // U32, BF16, F32
	shape []int
	fill  fill
	shard int
	off   int64 // within its shard's data section
}

// fill describes random contents: codes (uniform u32), a normal bf16 of
// mean/std, or A_log's log U(1, 16) in f32.
type fill struct {
	kind      byte // 'u' codes, 'n' normal bf16, 'a' A_log f32
	mean, std float32
}

func (t tensor) bytes() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= int64(d)
	}
	if t.dtype == "BF16" {
		return 2 * n
	}
	return 4 * n
}

// plan lists every tensor of the checkpoint with the names mlx-lm writes and
// the per-path quantization overrides of config.json.
func plan(s Shape, q Quant) (tensors []tensor, overrides map[string]any) {
	overrides = map[string]any{}
	add := func(name, dtype string, shape []int, f fill) {
		tensors = append(tensors, tensor{name: name, dtype: dtype, shape: shape, fill: f})
	}
	norm := func(name string, n int) { add(name, "BF16", []int{n}, fill{kind: 'n', mean: 1, std: 0.05}) }
	// A quantized linear layer [experts,] out × in: codes, scales, biases. The
	// weights come out uniform in about ±scale·2^(bits−1), std ≈ 0.58/√in, so
	// activations shrink slowly through the layers instead of blowing up.
	qlin := func(path string, out, in, experts, bits int) {
		if bits != q.Bits {
			overrides[path] = map[string]int{"bits": bits, "group_size": q.GroupSize}
		}
		lead := []int{}
		if experts > 0 {
			lead = []int{experts}
		}
		half := float32(int(1) << (bits - 1))
		scale := float32(1/math.Sqrt(float64(in))) / half
		add(path+".weight", "U32", append(append([]int{}, lead...), out, in*bits/32), fill{kind: 'u'})
		add(path+".scales", "BF16", append(append([]int{}, lead...), out, in/q.GroupSize), fill{kind: 'n', mean: scale, std: scale / 4})
		// The biases centre each group on zero (mid is the codes' mean), as a
		// trained checkpoint's groups are. Centred on −scale·half, every
		// weight leaned by −scale/2: the 4-bit projections' outputs then
		// shared a direction of their inputs' mean, the residual stream
		// collapsed onto it, and every token routed to the same experts (4
		// replies' 32 slots: 8 experts past the first layer), which made a
		// batch's and a prompt's experts look far cheaper than a real model's.
		mid := float32(int(1)<<bits-1) / 2
		add(path+".biases", "BF16", append(append([]int{}, lead...), out, in/q.GroupSize), fill{kind: 'n', mean: -scale * mid, std: scale})
	}
	p := "language_model.model."
	qlin(p+"embed_tokens", s.Vocab, s.Hidden, 0, q.Bits)
	if !s.Tied {
		qlin("language_model.lm_head", s.Vocab, s.Hidden, 0, q.Bits)
	}
	norm(p+"norm.weight", s.Hidden)
	convDim := 2*s.Hk*s.Dk + s.Hv*s.Dv
	router := q.RouterBits
	if router == 0 {
		router = q.Bits
	}
	attention := func(a string) {
		qlin(a+"q_proj", s.Heads*s.HeadDim*2, s.Hidden, 0, q.Bits) // per head [query | gate]
		qlin(a+"k_proj", s.KVHeads*s.HeadDim, s.Hidden, 0, q.Bits)
		qlin(a+"v_proj", s.KVHeads*s.HeadDim, s.Hidden, 0, q.Bits)
		qlin(a+"o_proj", s.Hidden, s.Heads*s.HeadDim, 0, q.Bits)
		norm(a+"q_norm.weight", s.HeadDim)
		norm(a+"k_norm.weight", s.HeadDim)
	}
	mlp := func(m string) {
		if s.ModelType == "qwen3_5_moe" {
			qlin(m+"gate", s.Experts, s.Hidden, 0, router)
			qlin(m+"switch_mlp.gate_proj", s.MoEInter, s.Hidden, s.Experts, q.Bits)
			qlin(m+"switch_mlp.up_proj", s.MoEInter, s.Hidden, s.Experts, q.Bits)
			qlin(m+"switch_mlp.down_proj", s.Hidden, s.MoEInter, s.Experts, q.Bits)
			qlin(m+"shared_expert.gate_proj", s.SharedInter, s.Hidden, 0, q.Bits)
			qlin(m+"shared_expert.up_proj", s.SharedInter, s.Hidden, 0, q.Bits)
			qlin(m+"shared_expert.down_proj", s.Hidden, s.SharedInter, 0, q.Bits)
			qlin(m+"shared_expert_gate", 1, s.Hidden, 0, router)
			return
		}
		qlin(m+"gate_proj", s.Intermediate, s.Hidden, 0, q.Bits)
		qlin(m+"up_proj", s.Intermediate, s.Hidden, 0, q.Bits)
		qlin(m+"down_proj", s.Hidden, s.Intermediate, 0, q.Bits)
	}
	if s.MTP { // the demo model's form: quantized, norms with the +1 folded in
		norm("mtp.pre_fc_norm_embedding.weight", s.Hidden)
		norm("mtp.pre_fc_norm_hidden.weight", s.Hidden)
		norm("mtp.norm.weight", s.Hidden)
		qlin("mtp.fc", s.Hidden, 2*s.Hidden, 0, q.Bits)
		norm("mtp.layers.0.input_layernorm.weight", s.Hidden)
		norm("mtp.layers.0.post_attention_layernorm.weight", s.Hidden)
		attention("mtp.layers.0.self_attn.")
		mlp("mtp.layers.0.mlp.")
	}
	if v := s.Vision; v != nil {
		visionTower(*v, s.Hidden, add)
	}
	for i := range s.Layers {
		l := p + "layers." + strconv.Itoa(i) + "."
		norm(l+"input_layernorm.weight", s.Hidden)
		norm(l+"post_attention_layernorm.weight", s.Hidden)
		if (i+1)%s.Interval == 0 {
			attention(l + "self_attn.")
		} else {
			g := l + "linear_attn."
			qlin(g+"in_proj_qkv", convDim, s.Hidden, 0, q.Bits)
			qlin(g+"in_proj_z", s.Hv*s.Dv, s.Hidden, 0, q.Bits)
			qlin(g+"in_proj_b", s.Hv, s.Hidden, 0, q.Bits)
			qlin(g+"in_proj_a", s.Hv, s.Hidden, 0, q.Bits)
			qlin(g+"out_proj", s.Hidden, s.Hv*s.Dv, 0, q.Bits)
			// MLX layout [C, K, 1] (the converted one: norms already carry +1).
			add(g+"conv1d.weight", "BF16", []int{convDim, s.ConvKernel, 1}, fill{kind: 'n', std: 0.5})
			add(g+"A_log", "F32", []int{s.Hv}, fill{kind: 'a'})
			add(g+"dt_bias", "BF16", []int{s.Hv}, fill{kind: 'n', std: 0.3})
			norm(g+"norm.weight", s.Dv)
		}
		mlp(l + "mlp.")
	}
	sort.Slice(tensors, func(i, j int) bool { return tensors[i].name < tensors[j].name })
	return tensors, overrides
}

// visionTower adds a vision tower's tensors in mlx-vlm's layout (bf16; the
// patch embedding a Conv3d [Hidden, Temporal, Patch, Patch, 3], channels
// last; each linear with its bias; LayerNorms with weight and bias), its
// merger projecting to the text model's width out.
func visionTower(v VisionShape, out int, add func(name, dtype string, shape []int, f fill)) {
	lin := func(path string, o, in int) {
		add(path+".weight", "BF16", []int{o, in}, fill{kind: 'n', std: float32(1 / math.Sqrt(float64(in)))})
		add(path+".bias", "BF16", []int{o}, fill{kind: 'n', std: 0.02})
	}
	layerNorm := func(path string, n int) {
		add(path+".weight", "BF16", []int{n}, fill{kind: 'n', mean: 1, std: 0.05})
		add(path+".bias", "BF16", []int{n}, fill{kind: 'n', std: 0.02})
	}
	t := "vision_tower."
	in := 3 * v.Temporal * v.Patch * v.Patch
	add(t+"patch_embed.proj.weight", "BF16", []int{v.Hidden, v.Temporal, v.Patch, v.Patch, 3}, fill{kind: 'n', std: float32(1 / math.Sqrt(float64(in)))})
	add(t+"patch_embed.proj.bias", "BF16", []int{v.Hidden}, fill{kind: 'n', std: 0.02})
	add(t+"pos_embed.weight", "BF16", []int{v.Positions, v.Hidden}, fill{kind: 'n', std: 0.02})
	for i := range v.Depth {
		b := t + "blocks." + strconv.Itoa(i) + "."
		layerNorm(b+"norm1", v.Hidden)
		layerNorm(b+"norm2", v.Hidden)
		lin(b+"attn.qkv", 3*v.Hidden, v.Hidden)
		lin(b+"attn.proj", v.Hidden, v.Hidden)
		lin(b+"mlp.linear_fc1", v.Intermediate, v.Hidden)
		lin(b+"mlp.linear_fc2", v.Hidden, v.Intermediate)
	}
	merged := v.Hidden * v.Merge * v.Merge
	layerNorm(t+"merger.norm", v.Hidden)
	lin(t+"merger.linear_fc1", merged, merged)
	lin(t+"merger.linear_fc2", out, merged)
}

// visionConfig is config.json's vision_config for v under a text model of
// width out.
func visionConfig(v VisionShape, out int) map[string]any {
	return map[string]any{"model_type": "qwen3_5", "depth": v.Depth, "hidden_size": v.Hidden,
		"intermediate_size": v.Intermediate, "num_heads": v.Heads, "in_channels": 3, "patch_size": v.Patch,
		"temporal_patch_size": v.Temporal, "spatial_merge_size": v.Merge, "out_hidden_size": out,
		"num_position_embeddings": v.Positions, "deepstack_visual_indexes": []int{}, "hidden_act": "gelu_pytorch_tanh"}
}

// preprocessorConfig is the image processor's, as the released models ship it.
func preprocessorConfig(v VisionShape) map[string]any {
	return map[string]any{"image_processor_type": "Qwen2VLImageProcessorFast", "patch_size": v.Patch,
		"temporal_patch_size": v.Temporal, "merge_size": v.Merge, "do_resize": true, "do_rescale": true,
		"rescale_factor": 1.0 / 255, "do_normalize": true, "image_mean": []float64{0.5, 0.5, 0.5},
		"image_std": []float64{0.5, 0.5, 0.5}, "size": map[string]int{"shortest_edge": 256 * 256, "longest_edge": 4096 * 4096}}
}

// Write writes config.json, the shards and (when there are several)
// model.safetensors.index.json of a synthetic checkpoint into dir, which is
// created if missing. Contents depend only on the options' shape, quantization
// and seed, not on the number of workers.
func Write(dir string, opt Options) error {
	if err := opt.Shape.Validate(opt.Quant); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tensors, overrides := plan(opt.Shape, opt.Quant)
	limit := opt.ShardBytes
	if limit <= 0 {
		limit = defaultShardBytes
	}
	// Shards in name order, each up to limit bytes (a larger tensor gets one alone).
	var sizes []int64
	for i := range tensors {
		n := tensors[i].bytes()
		if len(sizes) == 0 || (sizes[len(sizes)-1] > 0 && sizes[len(sizes)-1]+n > limit) {
			sizes = append(sizes, 0)
		}
		tensors[i].shard, tensors[i].off = len(sizes)-1, sizes[len(sizes)-1]
		sizes[len(sizes)-1] += n
	}
	names := shardNames(len(sizes))
	var total int64
	for _, n := range sizes {
		total += n
	}
	files, dataStart, err := createShards(dir, names, tensors, sizes)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return err
	}
	if err := fillAll(files, dataStart, tensors, opt, total); err != nil {
		return err
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return err
		}
	}
	files = nil
	if len(names) > 1 {
		weightMap := map[string]string{}
		for _, t := range tensors {
			weightMap[t.name] = names[t.shard]
		}
		index := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
		if err := writeJSON(filepath.Join(dir, "model.safetensors.index.json"), index); err != nil {
			return err
		}
	}
	if v := opt.Shape.Vision; v != nil {
		if err := writeJSON(filepath.Join(dir, "preprocessor_config.json"), preprocessorConfig(*v)); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "config.json"), config(opt.Shape, opt.Quant, overrides))
}

// shardNames are mlx-lm's: model.safetensors alone, else model-0000k-of-0000N.
func shardNames(n int) []string {
	if n == 1 {
		return []string{"model.safetensors"}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
	}
	return names
}

// createShards writes each shard's header and sizes the file, returning the
// open files and where each one's data section starts.
func createShards(dir string, names []string, tensors []tensor, sizes []int64) ([]*os.File, []int64, error) {
	headers := make([]map[string]any, len(names))
	for i := range headers {
		headers[i] = map[string]any{"__metadata__": map[string]string{"format": "mlx"}}
	}
	for _, t := range tensors {
		headers[t.shard][t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int64{t.off, t.off + t.bytes()}}
	}
	var files []*os.File
	starts := make([]int64, len(names))
	for i, name := range names {
		h, err := json.Marshal(headers[i])
		if err != nil {
			return files, nil, err
		}
		for len(h)%8 != 0 {
			h = append(h, ' ')
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return files, nil, err
		}
		files = append(files, f)
		prefix := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		if _, err := f.Write(append(prefix, h...)); err != nil {
			return files, nil, fmt.Errorf("%s: %w", name, err)
		}
		starts[i] = int64(8 + len(h))
		if err := f.Truncate(starts[i] + sizes[i]); err != nil {
			return files, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return files, starts, nil
}

// chunkBytes is the unit of work: one random stream, one WriteAt.
const chunkBytes = 8 << 20

// fillAll generates every tensor's bytes in chunks over the workers. Each chunk
// has its own generator seeded by (seed, tensor, chunk), so the output does not
// depend on the schedule.
func fillAll(files []*os.File, dataStart []int64, tensors []tensor, opt Options, total int64) error {
	type job struct {
		t        int
		off, len int64
	}
	jobs := make(chan job)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	var (
		done     atomic.Int64
		failed   atomic.Bool
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			buf := make([]byte, chunkBytes)
			for j := range jobs {
				t := tensors[j.t]
				b := buf[:j.len]
				rng := rand.New(rand.NewPCG(opt.Seed^uint64(j.t)*0x9E3779B97F4A7C15, uint64(j.off)))
				generate(b, t.fill, rng)
				if _, err := files[t.shard].WriteAt(b, dataStart[t.shard]+t.off+j.off); err != nil {
					once.Do(func() { firstErr = err; failed.Store(true) })
				}
				if opt.Progress != nil {
					opt.Progress(done.Add(j.len), total)
				}
			}
		})
	}
	for i, t := range tensors {
		for off := int64(0); off < t.bytes() && !failed.Load(); off += chunkBytes {
			jobs <- job{t: i, off: off, len: min(chunkBytes, t.bytes()-off)}
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// generate fills b with random contents of kind f.
func generate(b []byte, f fill, rng *rand.Rand) {
	switch f.kind {
	case 'u':
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
		}
		if r := len(b) % 8; r != 0 {
			var tail [8]byte
			binary.LittleEndian.PutUint64(tail[:], rng.Uint64())
			copy(b[len(b)-r:], tail[:r])
		}
	case 'n':
		for i := 0; i+2 <= len(b); i += 2 {
			v := f.mean + f.std*float32(rng.NormFloat64())
			binary.LittleEndian.PutUint16(b[i:], uint16(math.Float32bits(v)>>16))
		}
	case 'a': // A_log = log U(1, 16): decays between e^-1 and e^-16 per unit dt
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(math.Log(1+15*rng.Float64()))))
		}
	}
}

// config is config.json as an MLX conversion writes it: the text model nested
// under text_config, the quantization block with its per-path overrides.
func config(s Shape, q Quant, overrides map[string]any) map[string]any {
	quant := map[string]any{"bits": q.Bits, "group_size": q.GroupSize, "mode": "affine"}
	for k, v := range overrides {
		quant[k] = v
	}
	text := map[string]any{
		"model_type": s.ModelType + "_text", "hidden_size": s.Hidden, "num_hidden_layers": s.Layers,
		"full_attention_interval": s.Interval, "num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads,
		"head_dim": s.HeadDim, "linear_num_key_heads": s.Hk, "linear_num_value_heads": s.Hv,
		"linear_key_head_dim": s.Dk, "linear_value_head_dim": s.Dv, "linear_conv_kernel_dim": s.ConvKernel,
		"vocab_size": s.Vocab, "tie_word_embeddings": s.Tied, "rms_norm_eps": 1e-6,
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta, "partial_rotary_factor": s.PartialRotary},
	}
	if s.MaxPosition > 0 {
		text["max_position_embeddings"] = s.MaxPosition
	}
	if s.ModelType == "qwen3_5_moe" {
		text["num_experts"], text["num_experts_per_tok"] = s.Experts, s.TopK
		text["moe_intermediate_size"], text["shared_expert_intermediate_size"] = s.MoEInter, s.SharedInter
	} else {
		text["intermediate_size"] = s.Intermediate
	}
	// No id is special in random weights; the last one stands as end of sequence.
	top := map[string]any{"model_type": s.ModelType, "text_config": text, "quantization": quant,
		"tie_word_embeddings": s.Tied, "eos_token_id": s.Vocab - 1, "bagel_synthetic": true}
	if s.Vision != nil {
		top["vision_config"] = visionConfig(*s.Vision, s.Hidden)
		// The image's tokens: Qwen3.5's ids where the vocabulary has them,
		// else near its end (below the end of sequence).
		pad, start, end := 248056, 248053, 248054
		if s.Vocab <= pad {
			pad, start, end = s.Vocab-3, s.Vocab-5, s.Vocab-4
		}
		top["image_token_id"], top["vision_start_token_id"], top["vision_end_token_id"] = pad, start, end
		rope := text["rope_parameters"].(map[string]any)
		rope["mrope_section"], rope["mrope_interleaved"] = []int{11, 11, 10}, true
	}
	return top
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Bytes is the size of the checkpoint's tensors, for a disk-space check before
// writing.
func Bytes(s Shape, q Quant) int64 {
	tensors, _ := plan(s, q)
	var n int64
	for _, t := range tensors {
		n += t.bytes()
	}
	return n
}
