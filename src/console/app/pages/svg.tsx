import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { Failure } from '../ui.tsx';

/**
 * A diagram of this service (`/docs/machines/<name>.svg`), drawn inline so that its boxes and
 * arrows can be marked: `marks` maps element ids to the classes they get (and the step number
 * they were taken at).
 */
export function Svg(props: {
  src: string;
  marks?: { id: string; cls: string; step?: number }[];
  testId?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const svg = useQuery({
    queryKey: ['svg', props.src],
    staleTime: Number.POSITIVE_INFINITY,
    queryFn: async () => {
      const res = await fetch(props.src);
      if (!res.ok) throw new Error(`${props.src}: HTTP ${res.status}`);
      return res.text();
    },
  });
  const { marks } = props;
  useEffect(() => {
    const target = box.current;
    if (!target || !svg.data) return;
    const parsed = new DOMParser().parseFromString(svg.data, 'image/svg+xml').documentElement;
    const node = document.importNode(parsed, true);
    target.replaceChildren(node);
    for (const mark of marks ?? []) {
      const el = node.querySelector(`[id="${CSS.escape(mark.id)}"]`);
      if (!el) continue;
      el.classList.add(mark.cls);
      if (mark.step !== undefined) el.setAttribute('data-step', String(mark.step));
    }
  }, [svg.data, marks]);
  return (
    <>
      <Failure error={svg.error} />
      <div ref={box} className={`diagram${marks ? ' has-path' : ''}`} data-testid={props.testId} />
    </>
  );
}
