// idlescope report: the per-device timeline strip. Reads the JSON in #strip-data (written by
// analyzer/report/html_report.cc), draws one row per device on a canvas, coloured by what the
// device's time went to in each bucket, and lets the reader zoom (wheel, buttons, the gap table)
// and pan (drag). Every figure on the page comes from the report; the buckets only place the
// idle time in time.
(function () {
  'use strict';
  const scriptStart = performance.now();
  const data = JSON.parse(document.getElementById('strip-data').textContent);
  // One character per bucket and state: its share of the bucket in 64 levels (0 .. 63).
  const LEVELS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_';
  const box = document.getElementById('strips');
  const tip = document.getElementById('tip');
  const rangeLabel = document.getElementById('range');
  const canvas = document.createElement('canvas');
  box.appendChild(canvas);
  const ctx = canvas.getContext('2d');

  const B = data.buckets;
  const span = data.span_ns;
  const bucketNs = data.bucket_ns;
  const states = data.states;
  const rgb = states.map((s) => [1, 3, 5].map((i) => parseInt(s.color.substr(i, 2), 16)));
  const rowH = data.rows.length > 24 ? 12 : data.rows.length > 8 ? 18 : data.rows.length > 2 ? 28 : 40;
  const rowGap = 2;
  const labelW = 230;
  const axisH = 22;

  // Per row and state: prefix sums of the per-bucket shares, so any pixel's mean share is two
  // look-ups whether it covers a part of a bucket or many buckets.
  const levelOf = new Float64Array(128);
  for (let i = 0; i < LEVELS.length; i++) levelOf[LEVELS.charCodeAt(i)] = i / 63;
  const rows = data.rows.map((r) => {
    const states = [];
    const prefix = [];
    for (const [state, levels] of Object.entries(r.levels || {})) {
      const p = new Float64Array(B + 1);
      for (let i = 0; i < B; i++) p[i + 1] = p[i] + levelOf[levels.charCodeAt(i)];
      states.push(Number(state));
      prefix.push(p);
    }
    return {label: r.label, whole: r.whole, states: states, prefix: prefix};
  });
  // Colours as little-endian RGBA words, for a Uint32Array view of the image.
  const rgba = rgb.map((c) => (255 << 24 | c[2] << 16 | c[1] << 8 | c[0]) >>> 0);

  let t0 = 0;
  let t1 = span;
  let selected = -1;

  function sumTo(p, x) {  // prefix sum at fractional bucket position x
    if (x <= 0) return 0;
    if (x >= B) return p[B];
    const i = Math.floor(x);
    return p[i] + (x - i) * (p[i + 1] - p[i]);
  }

  function niceStep(range, target) {
    const raw = range / target;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }

  function fmt(ns) {
    const s = ns / 1e9;
    if (Math.abs(s) >= 1) return s.toFixed(3) + ' s';
    if (Math.abs(s) >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    return (s * 1e6).toFixed(1) + ' us';
  }

  // A tick label: the unit and the decimals the tick step needs, no more ("+1.5 s", "+250 ms").
  function fmtTick(ns, step) {
    const unit = step >= 1e9 ? 1e9 : step >= 1e6 ? 1e6 : 1e3;
    const name = unit === 1e9 ? ' s' : unit === 1e6 ? ' ms' : ' us';
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / unit) - 1e-9));
    return '+' + (ns / unit).toFixed(Math.min(decimals, 6)) + name;
  }

  function draw() {
    const width = Math.max(400, box.clientWidth);
    const height = axisH + rows.length * (rowH + rowGap);
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
      canvas.style.height = height + 'px';
    }
    const W = width - labelW;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    const img = ctx.createImageData(W, rows.length * (rowH + rowGap));
    const px = new Uint32Array(img.data.buffer);
    const nsPerPx = (t1 - t0) / W;
    // Each pixel column's bucket range, the same for every row.
    const from = new Float64Array(W);
    const to = new Float64Array(W);
    for (let x = 0; x < W; x++) {
      const a = t0 + x * nsPerPx;
      from[x] = Math.max(0, Math.min(span, a)) / bucketNs;
      to[x] = Math.max(0, Math.min(span, a + nsPerPx)) / bucketNs;
    }
    const shares = new Float64Array(states.length);
    const heights = new Int32Array(states.length);
    const carry = new Float64Array(states.length);
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r];
      const y0 = r * (rowH + rowGap);
      // Just under half a pixel to start with: a sliver of a state (a level in one bucket) still
      // gets its pixel, and no state more than half a pixel beyond its share over the row.
      carry.fill(0.499);
      for (let x = 0; x < W; x++) {
        const ba = from[x];
        const bb = to[x];
        if (bb <= ba) continue;
        shares.fill(0);
        if (row.whole >= 0) {
          shares[row.whole] = 1;
        } else {
          let idle = 0;
          for (let k = 0; k < row.prefix.length; k++) {
            const p = row.prefix[k];
            const v = (sumTo(p, bb) - sumTo(p, ba)) / (bb - ba);
            shares[row.states[k]] = v;
            idle += v;
          }
          shares[0] = Math.max(0, 1 - idle);  // state 0: busy
        }
        // Each state's height in whole pixels, its rounding carried on to the next column
        // (error diffusion along the row): a cause thinner than a pixel in every column (short
        // gaps spread over the job) still gets its share of the row's pixels, as dots, and no
        // state gets more. A state is drawn only in columns with time of it; its carry (within
        // half a pixel) waits for the next such column.
        let total = 0;
        let largest = 0;
        for (let s = 0; s < states.length; s++) {
          if (shares[s] <= 0) {
            heights[s] = 0;
            continue;
          }
          const want = shares[s] * rowH + carry[s];
          heights[s] = Math.max(0, Math.round(want));
          carry[s] = want - heights[s];
          total += heights[s];
          if (shares[s] > shares[largest]) largest = s;
        }
        // The heights fill the row exactly: the largest share takes up the difference.
        heights[largest] = Math.max(0, heights[largest] + rowH - total);
        // Stack them from the bottom of the row, in state order.
        let lo = 0;
        for (let s = 0; s < states.length && lo < rowH; s++) {
          const hi = Math.min(rowH, lo + heights[s]);
          const color = rgba[s];
          for (let k = lo; k < hi; k++) px[(y0 + rowH - 1 - k) * W + x] = color;
          lo = hi;
        }
      }
    }
    ctx.putImageData(img, labelW, axisH);

    // Labels and axis.
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = '#1d2430';
    rows.forEach((row, r) => {
      const y = axisH + r * (rowH + rowGap) + rowH / 2;
      if (row.shown === undefined) {  // measured once: text metrics are slow
        let label = row.label;
        while (label.length > 4 && ctx.measureText(label).width > labelW - 12) {
          label = label.slice(0, -2);
        }
        row.shown = label === row.label ? label : label + '…';
      }
      ctx.fillText(row.shown, 6, y);
    });
    const step = niceStep(t1 - t0, 8);
    ctx.strokeStyle = '#dde2ea';
    ctx.fillStyle = '#5b6575';
    ctx.textBaseline = 'top';
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = labelW + ((t - t0) / (t1 - t0)) * W;
      ctx.beginPath();
      ctx.moveTo(x + 0.5, axisH - 6);
      ctx.lineTo(x + 0.5, height);
      ctx.stroke();
      ctx.fillText(fmtTick(t, step), x + 3, 3);
    }
    // The longest gaps, exactly where the report puts them.
    data.gaps.forEach((g, i) => {
      const xa = labelW + ((g.start_ns - t0) / (t1 - t0)) * W;
      const xb = labelW + ((g.start_ns + g.length_ns - t0) / (t1 - t0)) * W;
      if (xb < labelW || xa > width) return;
      const y = axisH + g.row * (rowH + rowGap);
      ctx.lineWidth = i === selected ? 2.5 : 1;
      ctx.strokeStyle = i === selected ? '#d81b60' : '#1d2430';
      const left = Math.max(labelW, xa);
      ctx.strokeRect(left, y + 0.5, Math.max(2, Math.min(width, xb) - left), rowH - 1);
    });
    ctx.lineWidth = 1;
    rangeLabel.textContent = 'showing +' + fmt(t0) + ' to +' + fmt(t1) + ' of ' + fmt(span) +
        ' (one bucket: ' + fmt(bucketNs) + ')';
  }

  function setView(a, b) {
    const minRange = Math.max(1000, bucketNs / 64);
    if (b - a < minRange) {
      const m = (a + b) / 2;
      a = m - minRange / 2;
      b = m + minRange / 2;
    }
    if (b - a > span) {
      a = 0;
      b = span;
    }
    if (a < 0) {
      b -= a;
      a = 0;
    }
    if (b > span) {
      a -= b - span;
      b = span;
    }
    t0 = Math.max(0, a);
    t1 = b;
    draw();
  }

  function zoom(factor, atX) {
    const W = canvas.width - labelW;
    const f = atX === undefined ? 0.5 : Math.min(1, Math.max(0, (atX - labelW) / W));
    const at = t0 + f * (t1 - t0);
    const range = (t1 - t0) * factor;
    setView(at - f * range, at - f * range + range);
  }

  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, e.offsetX);
  }, {passive: false});
  let drag = null;
  canvas.addEventListener('mousedown', (e) => {
    drag = {x: e.clientX, t0: t0, t1: t1};
  });
  window.addEventListener('mouseup', () => {
    drag = null;
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dt = ((e.clientX - drag.x) / (canvas.width - labelW)) * (drag.t1 - drag.t0);
    setView(drag.t0 - dt, drag.t1 - dt);
  });
  canvas.addEventListener('dblclick', () => setView(0, span));
  canvas.addEventListener('mousemove', (e) => {
    const W = canvas.width - labelW;
    const r = Math.floor((e.offsetY - axisH) / (rowH + rowGap));
    if (drag || e.offsetX < labelW || r < 0 || r >= rows.length) {
      tip.style.display = 'none';
      return;
    }
    const t = t0 + ((e.offsetX - labelW) / W) * (t1 - t0);
    const row = rows[r];
    const lines = [data.rows[r].label, 'at +' + fmt(t)];
    if (row.whole >= 0) {
      lines.push(states[row.whole].name + ': whole job');
    } else {
      const bucket = Math.min(B - 1, Math.max(0, Math.floor(t / bucketNs)));
      let idle = 0;
      row.prefix.forEach((p, k) => {
        const v = p[bucket + 1] - p[bucket];
        idle += v;
        if (v > 0.005) lines.push(states[row.states[k]].name + ': ' + (100 * v).toFixed(0) + '%');
      });
      lines.splice(2, 0, states[0].name + ': ' + (100 * Math.max(0, 1 - idle)).toFixed(0) + '%' +
          ' (bucket +' + fmt(bucket * bucketNs) + ')');
    }
    tip.textContent = lines.join('\n');
    tip.style.left = (e.clientX + 14) + 'px';
    tip.style.top = (e.clientY + 14) + 'px';
    tip.style.display = 'block';
  });
  canvas.addEventListener('mouseleave', () => {
    tip.style.display = 'none';
  });
  document.getElementById('zoom-in').addEventListener('click', () => zoom(0.5));
  document.getElementById('zoom-out').addEventListener('click', () => zoom(2));
  document.getElementById('zoom-reset').addEventListener('click', () => setView(0, span));
  for (const tr of document.querySelectorAll('tr.gap')) {
    tr.addEventListener('click', () => {
      const i = Number(tr.dataset.gap);
      const g = data.gaps[i];
      document.querySelectorAll('tr.sel').forEach((x) => x.classList.remove('sel'));
      tr.classList.add('sel');
      selected = i;
      const pad = Math.max(g.length_ns / 2, bucketNs * 4);
      setView(g.start_ns - pad, g.start_ns + g.length_ns + pad);
      box.scrollIntoView({behavior: 'smooth', block: 'nearest'});
    });
  }
  window.addEventListener('resize', draw);
  draw();
  // For tests: how long the strip's script took, and that it has drawn.
  document.body.dataset.stripMs = (performance.now() - scriptStart).toFixed(1);
  document.body.dataset.renderedAtMs = performance.now().toFixed(1);
  document.body.dataset.rendered = '1';
})();
