package qwen

import (
	"encoding/json"
	"fmt"
	"strconv"

	"bagel/internal/jsonmsg"
	"bagel/safetensors"
)

// The vision tower (issue #39, MLX_QWEN35.md; transformers' qwen3_5 reuses
// Qwen3-VL's tower without DeepStack). What is here: its configuration and
// the check of its tensors, so that a checkpoint is known to see before the
// tower is bound (vision_tower.go, its forward in vision_encode.go).

// VisionConfig is config.json's vision_config.
type VisionConfig struct {
	Depth        int    `json:"depth"`
	Hidden       int    `json:"hidden_size"`
	Intermediate int    `json:"intermediate_size"`
	Heads        int    `json:"num_heads"`
	InChannels   int    `json:"in_channels"`
	Patch        int    `json:"patch_size"`
	Temporal     int    `json:"temporal_patch_size"`
	Merge        int    `json:"spatial_merge_size"`
	OutHidden    int    `json:"out_hidden_size"`
	Positions    int    `json:"num_position_embeddings"`
	DeepstackAt  []int  `json:"deepstack_visual_indexes"`
	HiddenAct    string `json:"hidden_act"`

	// From the rest of config.json: the image's tokens (image_token_id,
	// vision_start_token_id, vision_end_token_id; Qwen3.5's 248056, 248053,
	// 248054 when absent) and the text model's multimodal RoPE sections
	// (rope_parameters.mrope_section; [11, 11, 10] when absent): rotary
	// frequency i turns by an image token's row where i % 3 == 1 and
	// i < 3·Sections[1], by its column where i % 3 == 2 and i < 3·Sections[2].
	ImageToken, VisionStart, VisionEnd int32  `json:"-"`
	Sections                           [3]int `json:"-"`
}

// parseVisionConfig reads config.json's vision_config; nil when it has none.
func parseVisionConfig(data []byte) (*VisionConfig, error) {
	var top struct {
		Vision      json.RawMessage `json:"vision_config"`
		ImageToken  *int32          `json:"image_token_id"`
		VisionStart *int32          `json:"vision_start_token_id"`
		VisionEnd   *int32          `json:"vision_end_token_id"`
		Text        *struct {
			Rope *struct {
				Sections []int `json:"mrope_section"`
			} `json:"rope_parameters"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(data, &top); err != nil || top.Vision == nil {
		return nil, nil // the text model's parse reports a broken file
	}
	v := &VisionConfig{InChannels: 3, ImageToken: 248056, VisionStart: 248053, VisionEnd: 248054, Sections: [3]int{11, 11, 10}}
	if err := json.Unmarshal(top.Vision, v); err != nil {
		return nil, fmt.Errorf("vision_config: %w", jsonmsg.Explain(err, top.Vision))
	}
	for _, t := range []struct {
		dst *int32
		v   *int32
	}{{&v.ImageToken, top.ImageToken}, {&v.VisionStart, top.VisionStart}, {&v.VisionEnd, top.VisionEnd}} {
		if t.v != nil {
			*t.dst = *t.v
		}
	}
	if top.Text != nil && top.Text.Rope != nil && top.Text.Rope.Sections != nil {
		if len(top.Text.Rope.Sections) != 3 {
			return nil, fmt.Errorf("rope_parameters.mrope_section is %v, want three numbers", top.Text.Rope.Sections)
		}
		v.Sections = [3]int(top.Text.Rope.Sections)
	}
	return v, nil
}

// check refuses sizes a tower cannot have, before any tensor is looked at.
func (v *VisionConfig) check(textHidden int) error {
	for _, f := range []struct {
		name string
		n    int
	}{{"depth", v.Depth}, {"hidden_size", v.Hidden}, {"intermediate_size", v.Intermediate}, {"num_heads", v.Heads},
		{"patch_size", v.Patch}, {"temporal_patch_size", v.Temporal}, {"spatial_merge_size", v.Merge},
		{"num_position_embeddings", v.Positions}, {"in_channels", v.InChannels}} {
		if f.n <= 0 || f.n > 1<<16 {
			return fmt.Errorf("vision_config: %s is %d", f.name, f.n)
		}
	}
	if v.Hidden%v.Heads != 0 {
		return fmt.Errorf("vision_config: hidden_size %d is not a multiple of num_heads %d", v.Hidden, v.Heads)
	}
	if v.OutHidden != 0 && v.OutHidden != textHidden {
		return fmt.Errorf("vision_config: out_hidden_size %d, but the text model is %d wide", v.OutHidden, textHidden)
	}
	for _, s := range v.Sections {
		if s < 0 || s > 1<<10 {
			return fmt.Errorf("rope_parameters.mrope_section is %v", v.Sections)
		}
	}
	if len(v.DeepstackAt) > 0 {
		return fmt.Errorf("vision_config: DeepStack layers %v (Qwen3-VL's), which Qwen3.5 does not have", v.DeepstackAt)
	}
	return nil
}

// visionPrefixes are where a tower's tensors live: mlx-vlm's conversions,
// and raw Hugging Face checkpoints.
var visionPrefixes = []string{"vision_tower.", "model.visual."}

// visionTensor is one tensor a tower must hold: its name under the prefix
// and its shape (a Conv3d patch embedding in either layout: MLX's channels
// last or PyTorch's channels first).
type visionTensor struct {
	name   string
	shapes [][]int
}

// tensors lists the tower's tensors for a text model of width out.
func (v *VisionConfig) tensors(out int) []visionTensor {
	h, merged := v.Hidden, v.Hidden*v.Merge*v.Merge
	one := func(name string, shape ...int) visionTensor { return visionTensor{name, [][]int{shape}} }
	lin := func(path string, o, in int) []visionTensor {
		return []visionTensor{one(path+".weight", o, in), one(path+".bias", o)}
	}
	norm := func(path string, n int) []visionTensor {
		return []visionTensor{one(path+".weight", n), one(path+".bias", n)}
	}
	ts := []visionTensor{
		{"patch_embed.proj.weight", [][]int{{h, v.Temporal, v.Patch, v.Patch, v.InChannels}, {h, v.InChannels, v.Temporal, v.Patch, v.Patch}}},
		one("patch_embed.proj.bias", h),
		one("pos_embed.weight", v.Positions, h),
	}
	for i := range v.Depth {
		b := "blocks." + strconv.Itoa(i) + "."
		ts = append(ts, norm(b+"norm1", h)...)
		ts = append(ts, norm(b+"norm2", h)...)
		ts = append(ts, lin(b+"attn.qkv", 3*h, h)...)
		ts = append(ts, lin(b+"attn.proj", h, h)...)
		ts = append(ts, lin(b+"mlp.linear_fc1", v.Intermediate, h)...)
		ts = append(ts, lin(b+"mlp.linear_fc2", h, v.Intermediate)...)
	}
	ts = append(ts, norm("merger.norm", h)...)
	ts = append(ts, lin("merger.linear_fc1", merged, merged)...)
	return append(ts, lin("merger.linear_fc2", out, merged)...)
}

// VisionStatus says what the checkpoint holds of a vision tower, in a
// sentence for the model's information: none, declared without its
// tensors (an mlx-lm conversion keeps the config and drops the tower), a
// broken one (the first tensor that does not fit), or a tower that fits,
// which the model binds and runs (vision_tower.go). present is true only
// for the last.
func VisionStatus(cfg *Config, ck *safetensors.Checkpoint) (present bool, status string) {
	v, err := cfg.Vision, cfg.visionErr
	prefix := ""
	for _, p := range visionPrefixes {
		if _, ok := ck.Tensor(p + "patch_embed.proj.weight"); ok {
			prefix = p
		}
	}
	switch {
	case err != nil:
		return false, "its vision tower cannot be read: " + err.Error()
	case v == nil && prefix == "":
		return false, "no vision tower (text only)"
	case v == nil:
		return false, "vision tensors without a vision_config in config.json: not used"
	case prefix == "":
		return false, "config.json declares a vision tower, but the checkpoint holds none of its tensors (a text-only conversion)"
	}
	if err := v.check(cfg.HiddenSize); err != nil {
		return false, "its vision tower cannot be used: " + err.Error()
	}
	for _, t := range []struct {
		name string
		id   int32
	}{{"image_token_id", v.ImageToken}, {"vision_start_token_id", v.VisionStart}, {"vision_end_token_id", v.VisionEnd}} {
		if t.id < 0 || int(t.id) >= cfg.VocabSize {
			return false, fmt.Sprintf("its vision tower cannot be used: config.json's %s %d is outside the vocabulary (0..%d)", t.name, t.id, cfg.VocabSize-1)
		}
	}
	for _, want := range v.tensors(cfg.HiddenSize) {
		t, ok := ck.Tensor(prefix + want.name)
		if !ok {
			return false, fmt.Sprintf("its vision tower lacks %s%s", prefix, want.name)
		}
		if !shapeIn(t.Shape, want.shapes) {
			return false, fmt.Sprintf("its vision tower's %s%s is %v, want %v", prefix, want.name, t.Shape, want.shapes[0])
		}
		if t.DType != "BF16" && t.DType != "F16" && t.DType != "F32" {
			return false, fmt.Sprintf("its vision tower's %s%s is %s (a quantized tower is not read)", prefix, want.name, t.DType)
		}
	}
	return true, fmt.Sprintf("a vision tower of %d blocks, %d wide", v.Depth, v.Hidden)
}

// shapeIn reports whether shape is one of shapes.
func shapeIn(shape []int, shapes [][]int) bool {
	for _, s := range shapes {
		if len(s) == len(shape) {
			same := true
			for i := range s {
				same = same && s[i] == shape[i]
			}
			if same {
				return true
			}
		}
	}
	return false
}
