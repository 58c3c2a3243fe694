import { decisionsPerMinute } from '../decision-buckets.ts'
import { h, replaceChildren, scrollingTable, verdictBadge } from '../dom.ts'
import uPlot from '../vendor/uplot.js'
import { FALLBACK_COLOURS, VERDICT_COLOURS } from '../verdict-colours.ts'
import type { View } from '../view.ts'

/** Decisions per minute by verdict over the last hour, from the live feed; redrawn as manifests arrive. */
export const chartView: View = (ctx, main) => {
  const holder = h('div', {
    class: 'chart',
    role: 'img',
    'aria-label': 'Decisions per minute by verdict, last hour',
  })
  const totals = h('div', { class: 'chart-totals' })
  main.append(
    h(
      'p',
      { class: 'lead' },
      'Manifests issued per minute over the last hour, stacked by verdict. A rise in halting verdicts (criteria differ, evidence differs, contested) means orchestrators are drifting apart.',
    ),
    holder,
    totals,
  )
  let chart: uPlot | null = null
  let seriesKey = ''
  let latest: ReturnType<typeof decisionsPerMinute>['series'] = []
  const currentSeries = () => latest
  const draw = () => {
    const buckets = decisionsPerMinute(
      ctx.feed.entries.map((entry) => entry.manifest),
      Date.now(),
    )
    const key = buckets.series.map((s) => s.verdict).join('|')
    // Stacked bars: each minute's bar is that minute's decisions, split by verdict. uPlot draws series in order,
    // so the running totals go from the whole stack (drawn first, at the back) down to the first verdict.
    const running = buckets.series.map((_, i) =>
      buckets.minutes.map((_, t) =>
        buckets.series.slice(0, i + 1).reduce((sum, s) => sum + (s.counts[t] ?? 0), 0),
      ),
    )
    const order = buckets.series.map((_, i) => i).reverse()
    const data: uPlot.AlignedData = [buckets.minutes, ...order.map((i) => running[i]!)]
    latest = buckets.series
    const width = Math.max(280, holder.clientWidth)
    if (!chart || key !== seriesKey) {
      chart?.destroy()
      seriesKey = key
      const bars = uPlot.paths.bars?.({ size: [0.8, 24] })
      chart = new uPlot(
        {
          width,
          height: 320,
          scales: {
            // Half a minute of margin each side, so the first and last bars are drawn whole.
            x: { time: true, range: (_u, min, max) => [min - 30, max + 30] },
            y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
          },
          axes: [{}, { label: 'decisions per minute' }],
          series: [
            { label: 'Minute' },
            ...order.map((i) => {
              const verdict = buckets.series[i]!.verdict
              const colour = VERDICT_COLOURS[verdict] ?? FALLBACK_COLOURS[i % FALLBACK_COLOURS.length]!
              return {
                label: verdict,
                stroke: colour,
                fill: colour,
                width: 0,
                paths: bars,
                points: { show: false },
                // The legend shows this verdict's own count, not the running total the bar is drawn to.
                value: (_u: uPlot, _v: number | null, _series: number, index: number | null) =>
                  index === null ? '–' : String(currentSeries()[i]?.counts[index] ?? 0),
              }
            }),
          ],
        },
        data,
        holder,
      )
    } else {
      chart.setData(data)
    }
    const rows = buckets.series
      .map((s) => ({ verdict: s.verdict, total: s.counts.reduce((a, b) => a + b, 0) }))
      .sort((a, b) => b.total - a.total)
    replaceChildren(
      totals,
      rows.length === 0
        ? h('p', { class: 'empty' }, 'No decisions in the last hour.')
        : scrollingTable(
            'Decisions by verdict',
            h(
              'table',
              null,
              h('caption', null, 'Decisions in the last hour, by verdict'),
              h(
                'thead',
                null,
                h('tr', null, h('th', { scope: 'col' }, 'Verdict'), h('th', { scope: 'col' }, 'Decisions')),
              ),
              h(
                'tbody',
                null,
                rows.map((row) =>
                  h(
                    'tr',
                    null,
                    h('th', { scope: 'row' }, verdictBadge(row.verdict)),
                    h('td', null, String(row.total)),
                  ),
                ),
              ),
            ),
          ),
    )
  }
  draw()
  ctx.onLeave(ctx.feed.subscribe(draw))
  // The window slides even when nothing arrives.
  const timer = setInterval(draw, 30_000)
  const resize = new ResizeObserver(() =>
    chart?.setSize({ width: Math.max(280, holder.clientWidth), height: 320 }),
  )
  resize.observe(holder)
  ctx.onLeave(() => {
    clearInterval(timer)
    resize.disconnect()
    chart?.destroy()
  })
}
