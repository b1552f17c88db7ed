/** A line chart as a standalone SVG, for the evaluation's calibration and threshold figures (no dependency). */

export interface LineSeries {
  label: string;
  color: string;
  points: readonly (readonly [number, number])[];
  dashed?: boolean;
}

export interface Axes {
  x: { label: string; min: number; max: number };
  y: { label: string; min: number; max: number };
}

/** Distinct colours for up to ten series (the last ones repeat beyond that). */
export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
  '#bcbd22',
];

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fixed = (value: number) => value.toFixed(1);

export function lineChartSvg(title: string, axes: Axes, series: readonly LineSeries[]): string {
  const width = 760;
  const height = 420;
  const margin = { top: 46, right: 200, bottom: 50, left: 64 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const spanX = axes.x.max - axes.x.min || 1;
  const spanY = axes.y.max - axes.y.min || 1;
  const x = (v: number) => margin.left + ((v - axes.x.min) / spanX) * plotW;
  const y = (v: number) => margin.top + plotH - ((v - axes.y.min) / spanY) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="${margin.left + plotW / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const vy = axes.y.min + (spanY * i) / 4;
    const vx = axes.x.min + (spanX * i) / 4;
    parts.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${fixed(y(vy))}" y2="${fixed(y(vy))}" stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${fixed(y(vy) + 4)}" text-anchor="end">${Number(vy.toFixed(2))}</text>`,
      `<text x="${fixed(x(vx))}" y="${margin.top + plotH + 16}" text-anchor="middle">${Number(vx.toFixed(2))}</text>`,
    );
  }
  parts.push(
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
    `<text x="${margin.left + plotW / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(axes.x.label)}</text>`,
    `<text x="16" y="${margin.top + plotH / 2}" transform="rotate(-90 16 ${margin.top + plotH / 2})" text-anchor="middle">${escapeXml(axes.y.label)}</text>`,
  );
  series.forEach((s, index) => {
    const inside = s.points.filter(([px, py]) => Number.isFinite(px) && Number.isFinite(py));
    if (inside.length > 0) {
      const path = inside.map(([px, py]) => `${fixed(x(px))},${fixed(y(py))}`).join(' ');
      parts.push(
        `<polyline points="${path}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
        ...inside.map(
          ([px, py]) => `<circle cx="${fixed(x(px))}" cy="${fixed(y(py))}" r="3" fill="${s.color}"/>`,
        ),
      );
    }
    const ly = margin.top + 8 + index * 18;
    parts.push(
      `<line x1="${margin.left + plotW + 14}" x2="${margin.left + plotW + 34}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
      `<text x="${margin.left + plotW + 40}" y="${ly + 4}">${escapeXml(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
