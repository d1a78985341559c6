// One series over time, drawn by uPlot on a canvas. Each chart holds one currency's figures:
// charts never add amounts of different currencies together.
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

const HEIGHT = 180;

// Steps a count axis may take: whole numbers only.
const WHOLE = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

export function Chart({ id, title, dates, values, format, summary, whole = false }) {
  const box = useRef(null);
  useEffect(() => {
    const element = box.current;
    const width = () => Math.max(200, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: HEIGHT,
        legend: { show: false },
        cursor: { show: true, points: { show: false } },
        scales: { x: { time: true } },
        series: [{}, { label: title, stroke: '#4b44c8', width: 2, fill: 'rgba(75,68,200,0.10)' }],
        axes: [
          { stroke: '#4f566b' },
          {
            stroke: '#4f566b',
            size: 70,
            values: (u, ticks) => ticks.map(format),
            ...(whole ? { incrs: WHOLE } : {}),
          },
        ],
      },
      [dates, values],
      element,
    );
    // A window resize, not a ResizeObserver: the observer's loop warning is reported as a page
    // error, and the chart only needs to follow the window.
    const resize = () => plot.setSize({ width: width(), height: HEIGHT });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [dates, values]);
  return html`<figure class="chart-figure" id=${id}>
    <figcaption class="small muted">${title}</figcaption>
    <div ref=${box} class="chart" role="img" aria-label=${summary}></div>
  </figure>`;
}
