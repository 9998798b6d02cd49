package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/store"
)

// Images in a chat (#39): dropped on the window or picked with the
// composer's Attach button, an image is checked against the loaded model (it
// must have a vision tower, and the file must be an image the processor
// reads), kept in the store's image folder and shown above the entry until
// it is sent with the next message or removed. A question's images are shown
// in its message and go to the model with it, every turn (the engine's
// prompt cache keeps the tower's work of earlier turns; the app keeps each
// image's tower output for the loaded model, encoded).

// imageExts are the extensions the Attach dialog offers.
var imageExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif"}

// imagesRefused says why images cannot go into a chat now ("" when they can).
func (a *App) imagesRefused() string {
	switch {
	case a.remote != nil:
		return "" // the remote engine reads them itself, or says why not
	case a.eng == nil:
		return "no model is loaded"
	}
	if ok, why := a.eng.CanReadImages(); !ok {
		return a.modelName() + " cannot read images: " + why
	}
	return ""
}

// attachImage checks the image file at path against the loaded model and
// puts it in the composer for the next message.
func (a *App) attachImage(path string) {
	name := filepath.Base(path)
	if why := a.imagesRefused(); why != "" {
		a.showError("The image cannot go into this chat", fmt.Errorf("%s: %s", name, why))
		return
	}
	data, err := engine.ReadImageFile(path)
	switch { // decoded now: a broken file is named now, not at Send
	case err == nil && a.remote != nil:
		_, err = engine.NewRemoteImage(data)
	case err == nil:
		_, err = engine.ImageTokens(a.modelDir, data)
	}
	if err != nil {
		a.showError("The image cannot be read", fmt.Errorf("%s: %w", name, err))
		return
	}
	img, err := a.store.SaveImage(data, name)
	if err != nil {
		a.showError("The image could not be kept", err)
		return
	}
	a.composer.attach(img)
}

// pickImage opens the Attach dialog.
func (a *App) pickImage() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil {
			a.showError("The image cannot be read", err)
			return
		}
		if r == nil {
			return // cancelled
		}
		path := r.URI().Path()
		r.Close()
		a.attachImage(path)
	}, a.win)
	d.SetFilter(storage.NewExtensionFileFilter(imageExts))
	d.Resize(fyne.NewSize(760, 520))
	a.showDialog(d, nil)
}

// attach adds img to the next message's images.
func (c *composer) attach(img store.Image) {
	if slices.Contains(c.attached, img) {
		return
	}
	c.attached = append(c.attached, img)
	c.showAttached()
}

// showAttached lays out the attached images, each with its remove button.
func (c *composer) showAttached() {
	c.attachRow.Objects = nil
	for _, img := range c.attached {
		remove := widget.NewButtonWithIcon("", theme.CancelIcon(), func() {
			c.attached = slices.DeleteFunc(c.attached, func(i store.Image) bool { return i == img })
			c.showAttached()
		})
		remove.Importance = widget.LowImportance
		tile := newPicture(c.a.store.ImagePath(img), img.Name, attachedSize)
		c.attachRow.Add(container.NewBorder(nil, nil, nil, container.NewVBox(remove), tile))
	}
	c.attachRow.Hidden = len(c.attached) == 0
	c.attachRow.Refresh()
	c.a.countTokensSoon() // the images' tokens count with the draft's
}

// attachedSize is the side of an attached image's thumbnail.
const attachedSize = 72

// takeAttached empties the composer's images, returning them.
func (c *composer) takeAttached() []store.Image {
	out := c.attached
	c.attached = nil
	c.showAttached()
	return out
}

// requestImages lists the images of msgs (the conversation the model
// answers, in order) for the engine's request.
func requestImages(msgs []store.Message, replyID int64) []store.Image {
	var out []store.Image
	for _, m := range msgs {
		if m.ID < replyID && m.Role == store.RoleUser {
			out = append(out, m.Images...)
		}
	}
	return out
}

// encodeImages runs images through the loaded model's tower (off the UI
// thread), each once for this model: encoded keeps the results until the
// model changes. The ones not encoded yet are read together (the next
// decoded while the tower reads the one before).
func (a *App) encodeImages(ctx context.Context, eng *engine.Engine, images []store.Image) ([]*engine.Image, error) {
	out := make([]*engine.Image, len(images))
	var missing []int // indexes into images
	var datas [][]byte
	a.encodedMu.Lock()
	if a.encodedFor != eng {
		a.encoded, a.encodedFor = map[string]*engine.Image{}, eng
	}
	for i, img := range images {
		if enc, ok := a.encoded[img.File]; ok {
			out[i] = enc
		} else {
			missing = append(missing, i)
		}
	}
	a.encodedMu.Unlock()
	for _, i := range missing {
		data, err := a.store.ReadImage(images[i])
		if err != nil {
			return nil, err
		}
		datas = append(datas, data)
	}
	if len(datas) == 0 {
		return out, nil
	}
	encoded, err := eng.EncodeImagesContext(ctx, datas)
	if err != nil {
		if ie := (*engine.ImageError)(nil); errors.As(err, &ie) {
			return nil, fmt.Errorf("%s: %w", images[missing[ie.Index]].Name, ie.Err)
		}
		return nil, err
	}
	a.encodedMu.Lock()
	defer a.encodedMu.Unlock()
	for k, i := range missing {
		out[i] = encoded[k]
		if a.encodedFor == eng {
			a.encoded[images[i].File] = encoded[k]
		}
	}
	return out, nil
}

// remoteImages are images as a remote engine takes them: the files' bytes.
func (a *App) remoteImages(images []store.Image) ([]*engine.Image, error) {
	var out []*engine.Image
	for _, img := range images {
		data, err := a.store.ReadImage(img)
		if err == nil {
			var r *engine.Image
			if r, err = engine.NewRemoteImage(data); err == nil {
				out = append(out, r)
				continue
			}
		}
		return nil, fmt.Errorf("%s: %w", img.Name, err)
	}
	return out, nil
}

// generateWithImages is gen.Generate for req after its images are encoded,
// on the goroutine that reads the events: a failure ends the reply as an
// engine error would.
func (a *App) generateWithImages(ctx context.Context, gen generator, req engine.Request, images []store.Image) <-chan engine.Event {
	if len(images) == 0 {
		return gen.Generate(ctx, req)
	}
	out := make(chan engine.Event, 1)
	eng, local := gen.(*engine.Engine)
	if p, ok := gen.(*engine.Parallel); ok {
		eng, local = a.eng, a.eng != nil && p != nil // a batch of the loaded model's
	}
	go func() {
		defer close(out)
		var err error
		if !local {
			req.Images, err = a.remoteImages(images)
		} else {
			req.Images, err = a.encodeImages(ctx, eng, images)
		}
		switch {
		case ctx.Err() != nil: // stopped while the images were read
			out <- engine.Event{Kind: engine.EventDone, Reason: engine.ReasonCancelled}
			return
		case err != nil:
			out <- engine.Event{Kind: engine.EventError, Err: fmt.Errorf("an image of the chat: %w", err)}
			return
		}
		for ev := range gen.Generate(ctx, req) {
			out <- ev
		}
	}()
	return out
}

// imageTokens is how many prompt tokens img takes with eng's model (1 when
// its file cannot be read: the count then errs low, the reply says why),
// kept per image for the model.
func (a *App) imageTokens(eng *engine.Engine, img store.Image) int {
	a.encodedMu.Lock()
	if a.tokensFor != eng {
		a.imageTokenCounts, a.tokensFor = map[string]int{}, eng
	}
	n, ok := a.imageTokenCounts[img.File]
	a.encodedMu.Unlock()
	if ok {
		return n
	}
	n = 1
	if data, err := a.store.ReadImage(img); err == nil {
		if t, err := engine.ImageTokens(eng.Dir, data); err == nil {
			n = t
		}
	}
	a.encodedMu.Lock()
	if a.tokensFor == eng {
		a.imageTokenCounts[img.File] = n
	}
	a.encodedMu.Unlock()
	return n
}

// imagesFit refuses a question with images that, with the chat before it,
// would not fit the model's context: said before anything is saved or sent
// (an image can take thousands of tokens).
func (a *App) imagesFit(text string, images []store.Image) error {
	eng := a.eng
	if eng == nil || len(images) == 0 {
		return nil
	}
	var conv store.Conversation
	if a.conv != nil {
		conv = *a.conv
	}
	before := int64(math.MaxInt64)
	if a.editing != nil {
		before = a.editing.ID
	}
	msgs := history(conv, a.msgs, before)
	all := append(requestImages(a.msgs, before), images...)
	question := engine.Message{Role: "user"}
	for range images {
		question.Parts = append(question.Parts, engine.Part{Image: true})
	}
	question.Parts = append(question.Parts, engine.Part{Text: text})
	ids, err := eng.PromptTokens(engine.Request{Messages: append(msgs, question), EnableThinking: a.settings.Thinking})
	if err != nil {
		return err
	}
	n := len(ids)
	for _, img := range all {
		n += a.imageTokens(eng, img) - 1
	}
	if ctx := eng.ContextLength(); n >= ctx {
		return fmt.Errorf("with its images the chat takes %d tokens, and the context holds %d: start a new chat, send fewer or smaller images, or raise Settings › Context length", n, ctx)
	}
	return nil
}
